-- The console's task list filters by review pool through task_review_pools
-- itself (docs/performance.md#the-console-task-list): each row carries its
-- task's created_at, so a pool's newest page is read by keyset from
-- (pool_id, task_created_at DESC, task_id DESC) instead of walking every
-- newer task of the workspace.
ALTER TABLE task_review_pools ADD COLUMN task_created_at timestamptz;
UPDATE task_review_pools tp SET task_created_at = t.created_at FROM tasks t WHERE t.id = tp.task_id;
ALTER TABLE task_review_pools ALTER COLUMN task_created_at SET NOT NULL;
CREATE INDEX task_review_pools_pool_created ON task_review_pools (pool_id, task_created_at DESC, task_id DESC);
