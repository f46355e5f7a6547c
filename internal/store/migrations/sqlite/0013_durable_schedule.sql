-- Postgres records what the platform owes; Redis only carries it
-- (docs/architecture.md#12-postgres-records-redis-carries). An outbox row
-- now says when its job is due (due_at; NULL is at once) and when its job
-- finished for good (done_at): a row sent but not done whose job Redis lost
-- is enqueued again by the worker's sweep. Rows sent before this version
-- count as done (their jobs ran, or were lost before anything recorded it).
-- A failed webhook attempt records when the next one is due, so a delivery
-- re-created after Redis lost its retry keeps its attempt count and
-- schedule.
ALTER TABLE outbox ADD COLUMN due_at DATETIME;
ALTER TABLE outbox ADD COLUMN done_at DATETIME;
UPDATE outbox SET done_at = sent_at WHERE sent_at IS NOT NULL;
CREATE INDEX outbox_owed ON outbox (created_at) WHERE sent_at IS NOT NULL AND done_at IS NULL;
ALTER TABLE webhook_deliveries ADD COLUMN next_attempt_at DATETIME;
