-- The W3C traceparent of the span whose transaction wrote the row, so the
-- job the relay enqueues for it continues that trace (internal/tracing):
-- a resume event's job joins its approval's trace. Null when tracing is off
-- or the row was written outside a traced span. Numbered 0016 to leave
-- 0013-0015 to the branches written beside it.
ALTER TABLE outbox ADD COLUMN traceparent text;
