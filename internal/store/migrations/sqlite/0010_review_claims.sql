-- The review queue's assigned-to-me pass without the claims' churn (see the
-- Postgres migration): the assignment index holds unclaimed tasks only, and
-- a claim whose time passed before its expiry job cleared it is found by
-- its assignee and end.
DROP INDEX tasks_review_assigned;
CREATE INDEX tasks_review_assigned ON tasks (assigned_to, workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input' AND assigned_to IS NOT NULL AND claim_expires_at IS NULL;
CREATE INDEX tasks_review_claims ON tasks (assigned_to, claim_expires_at)
    WHERE status = 'waiting_for_input' AND claim_expires_at IS NOT NULL;
