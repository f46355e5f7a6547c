-- The review queue (POST /api/review/next) reads parked tasks of one
-- workspace in priority order (the agent's priority_field key detail,
-- copied onto tasks.priority), oldest first, and first those assigned to
-- the reviewer asking. Partial indexes on parked tasks only: completed
-- tasks, the bulk of the table, are never in them.
CREATE INDEX tasks_review_queue ON tasks (workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input';
CREATE INDEX tasks_review_assigned ON tasks (assigned_to, workspace_id, priority DESC, created_at, id)
    WHERE status = 'waiting_for_input' AND assigned_to IS NOT NULL;
-- The console's task list, newest first, with or without a status: served
-- in order instead of sorting the workspace's tasks (100,000 parked tasks:
-- 93 ms to 0.07 ms a page).
DROP INDEX tasks_workspace_status;
CREATE INDEX tasks_workspace_created ON tasks (workspace_id, created_at DESC, id DESC);
CREATE INDEX tasks_workspace_status_created ON tasks (workspace_id, status, created_at DESC, id DESC);
-- Pending awaits, longest-waiting first: the console's parked tasks
-- (196 ms to 0.3 ms at 100,000).
CREATE INDEX task_awaits_pending ON task_awaits (created_at, id) WHERE status = 'pending';
