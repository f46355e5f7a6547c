-- The review queue's assigned-to-me pass (review.Queue.Next) without the
-- claims' churn. tasks_review_assigned of 0007 took an entry for every
-- claim, since a claim assigns the task to its reviewer, and the release
-- that follows (abort, a resolving action) left it dead under that
-- reviewer's key, where their next pass looks. While those entries could
-- not be removed the pass walked them all: with a snapshot held open (a
-- long report, a dump), 483 index pages for an empty pass after 20 s of 16
-- reviewers claiming and releasing; after claims made without the pass
-- (the bench's raw phase), 1,590 pages and 4 ms. A live claim is never a
-- candidate, so the assignment index now holds unclaimed tasks only (a
-- claim's row version leaves it, an abort's has no assignment), and a
-- claim whose time passed before its expiry job cleared it is found by its
-- assignee and end instead: a scan up to now stops before the entries of
-- live and recently released claims. The pass reads both through one
-- BitmapOr (13 pages in the same held-snapshot run).
DROP INDEX tasks_review_assigned;
CREATE INDEX tasks_review_assigned ON tasks (assigned_to, workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input' AND assigned_to IS NOT NULL AND claim_expires_at IS NULL;
CREATE INDEX tasks_review_claims ON tasks (assigned_to, claim_expires_at)
    WHERE status = 'waiting_for_input' AND claim_expires_at IS NOT NULL;
