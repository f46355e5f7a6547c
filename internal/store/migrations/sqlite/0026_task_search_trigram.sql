-- The Postgres twin adds trigram indexes for the console task list's search
-- (docs/performance.md#the-console-task-list). SQLite has none: dev mode's
-- search reads only the newest tasks of the list (task.SearchScanBound)
-- through tasks_workspace_created, and the console says so.
SELECT 1;
