-- The worker's sweep fails agent tool calls left running past their
-- deadline (the process that ran one stopped before recording it:
-- docs/architecture.md#12-postgres-records-redis-carries): it reads them by this
-- partial index, which holds only the calls running now.
CREATE INDEX tool_calls_running ON tool_calls (created_at) WHERE status = 'running';
