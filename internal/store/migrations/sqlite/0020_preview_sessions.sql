-- Preview sessions (see postgres/0020). SQLite cannot drop a column's NOT
-- NULL, so the table is rebuilt; the runner turns foreign keys off around it
-- and checks them before the commit.
CREATE TABLE app_sessions_rebuilt (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT REFERENCES tasks (id) ON DELETE CASCADE,
    step_id      TEXT REFERENCES steps (id) ON DELETE CASCADE,
    user_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    expires_at   DATETIME NOT NULL,
    revoked_at   DATETIME,
    created_at   DATETIME NOT NULL,
    token_id     TEXT REFERENCES api_tokens (id) ON DELETE SET NULL,
    kind         TEXT NOT NULL DEFAULT 'task' CHECK (kind IN ('task', 'preview')),
    binding_id   TEXT REFERENCES bindings (id) ON DELETE CASCADE,
    CHECK ((kind = 'task' AND task_id IS NOT NULL AND step_id IS NOT NULL)
        OR (kind = 'preview' AND task_id IS NULL AND step_id IS NULL AND binding_id IS NOT NULL))
);
INSERT INTO app_sessions_rebuilt (id, workspace_id, task_id, step_id, user_id, expires_at, revoked_at, created_at, token_id)
    SELECT id, workspace_id, task_id, step_id, user_id, expires_at, revoked_at, created_at, token_id FROM app_sessions;
DROP TABLE app_sessions;
ALTER TABLE app_sessions_rebuilt RENAME TO app_sessions;
CREATE INDEX app_sessions_task ON app_sessions (task_id, created_at);
CREATE INDEX app_sessions_token ON app_sessions (token_id) WHERE token_id IS NOT NULL;
CREATE INDEX app_sessions_user ON app_sessions (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX app_sessions_preview ON app_sessions (workspace_id, expires_at) WHERE kind = 'preview';
