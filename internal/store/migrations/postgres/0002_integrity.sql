-- Issue 7, integrity: sessions remember the host token they were minted
-- with (revoking it, or deleting its user, ends them); write intents make a
-- data-source write and its feed row survive a crash together; a webhook
-- attempt is recorded before it is sent; sent outbox rows are pruned.
ALTER TABLE app_sessions ADD COLUMN token_id uuid REFERENCES api_tokens (id) ON DELETE SET NULL;
CREATE INDEX app_sessions_token ON app_sessions (token_id) WHERE token_id IS NOT NULL;
CREATE INDEX app_sessions_user ON app_sessions (user_id) WHERE user_id IS NOT NULL;

-- In flight only (normally a handful of rows), so no index but the key and
-- no foreign keys: each would cost every /write a lookup, and a lock on its
-- task row that every concurrent write on the task shares. The sweep drops
-- the intents of a task deleted meanwhile.
CREATE TABLE write_intents (
    id         uuid PRIMARY KEY,
    owner      uuid NOT NULL,
    task_id    uuid NOT NULL,
    step_id    uuid NOT NULL,
    name       text NOT NULL,
    actor      text NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL
);

ALTER TABLE webhook_deliveries ADD COLUMN finished_at timestamptz;
UPDATE webhook_deliveries SET finished_at = created_at;

CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
