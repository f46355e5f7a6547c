-- The console's task list filters by review pool through task_review_pools
-- itself (docs/performance.md#the-console-task-list): each row carries its
-- task's created_at, so a pool's newest page is read by keyset from
-- (pool_id, task_created_at DESC, task_id DESC) instead of walking every
-- newer task of the workspace. (SQLite adds no NOT NULL column without a
-- default; every writer sets it.)
ALTER TABLE task_review_pools ADD COLUMN task_created_at DATETIME;
UPDATE task_review_pools SET task_created_at = (SELECT t.created_at FROM tasks t WHERE t.id = task_review_pools.task_id);
CREATE INDEX task_review_pools_pool_created ON task_review_pools (pool_id, task_created_at DESC, task_id DESC);
