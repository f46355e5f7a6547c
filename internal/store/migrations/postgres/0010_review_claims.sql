-- The review queue's assigned-to-me pass (review.Queue.Next) without the
-- claims' churn. tasks_review_assigned of 0007 took an entry for every
-- claim, since a claim assigns the task to its reviewer; the release that
-- follows (abort, a resolving action) left it dead, so each reviewer's
-- next claim walked the dead entries of all their past claims until a
-- vacuum (100,000 parked tasks, 16 reviewers, some 6,000 claims each:
-- 1,590 index pages and 4 ms for an empty pass). A live claim is never a candidate, so the
-- assignment index now holds unclaimed tasks only (a claim's row version
-- leaves it, an abort's has no assignment), and a claim whose time passed
-- before its expiry job cleared it is found by its assignee and end instead:
-- a scan up to now stops before the live claims' entries, dead ones
-- included. The pass reads both through one BitmapOr.
DROP INDEX tasks_review_assigned;
CREATE INDEX tasks_review_assigned ON tasks (assigned_to, workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input' AND assigned_to IS NOT NULL AND claim_expires_at IS NULL;
CREATE INDEX tasks_review_claims ON tasks (assigned_to, claim_expires_at)
    WHERE status = 'waiting_for_input' AND claim_expires_at IS NOT NULL;
