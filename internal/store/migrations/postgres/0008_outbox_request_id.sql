-- The id of the request whose transaction wrote the row, so the job the
-- relay enqueues for it carries that id (internal/requestid) and one id finds
-- the work in the api's and the worker's logs. Null for rows written outside
-- a request.
ALTER TABLE outbox ADD COLUMN request_id text;
