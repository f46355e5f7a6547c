-- The review queue (POST /api/review/next) reads parked tasks of one
-- workspace in priority order (the agent's priority_field key detail,
-- copied onto tasks.priority), oldest first, and first those assigned to
-- the reviewer asking. Partial indexes on parked tasks only: completed
-- tasks, the bulk of the table, are never in them.
CREATE INDEX tasks_review_queue ON tasks (workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input';
CREATE INDEX tasks_review_assigned ON tasks (assigned_to, workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input' AND assigned_to IS NOT NULL;
-- A task's pending awaits, for the queue's EXISTS and the expiry jobs.
CREATE INDEX task_awaits_pending ON task_awaits (task_id) WHERE status = 'pending';
