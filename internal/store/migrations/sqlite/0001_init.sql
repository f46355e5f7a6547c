-- The platform schema for SQLite (embedded dev mode); same tables and columns as postgres/0001_init.sql.
CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email         TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL DEFAULT '',
    role          TEXT NOT NULL CHECK (role IN ('admin', 'reviewer')),
    password_hash TEXT NOT NULL,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL
);

CREATE TABLE agents (
    id                           TEXT PRIMARY KEY,
    workspace_id                 TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                         TEXT NOT NULL,
    key_definitions              JSON,
    summary_instructions         TEXT NOT NULL DEFAULT '',
    priority_field               TEXT NOT NULL DEFAULT '',
    document_translation_enabled BOOLEAN NOT NULL DEFAULT false,
    resume_webhook_url           TEXT NOT NULL DEFAULT '',
    webhook_secret_enc           BLOB,
    created_at                   DATETIME NOT NULL,
    updated_at                   DATETIME NOT NULL
);
CREATE INDEX agents_workspace ON agents (workspace_id);

CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    scope        TEXT NOT NULL CHECK (scope IN ('host', 'agent', 'admin')),
    name         TEXT NOT NULL DEFAULT '',
    token_hash   TEXT NOT NULL UNIQUE,
    user_id      TEXT REFERENCES users (id) ON DELETE CASCADE,
    agent_id     TEXT REFERENCES agents (id) ON DELETE CASCADE,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    revoked_at   DATETIME
);

CREATE TABLE integrations (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    base_url     TEXT NOT NULL DEFAULT '',
    config       JSON,
    secrets_enc  BLOB,
    created_at   DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL
);
CREATE INDEX integrations_workspace ON integrations (workspace_id);

CREATE TABLE bindings (
    id                 TEXT PRIMARY KEY,
    workspace_id       TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    binding_kind       TEXT NOT NULL,
    integration_id     TEXT REFERENCES integrations (id) ON DELETE RESTRICT,
    allowed_operations JSON NOT NULL,
    version            INTEGER NOT NULL,
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL
);
CREATE INDEX bindings_workspace ON bindings (workspace_id);

CREATE TABLE binding_versions (
    id                 TEXT PRIMARY KEY,
    binding_id         TEXT NOT NULL REFERENCES bindings (id) ON DELETE CASCADE,
    version            INTEGER NOT NULL,
    name               TEXT NOT NULL,
    binding_kind       TEXT NOT NULL,
    integration_id     TEXT,
    allowed_operations JSON NOT NULL,
    diff               JSON,
    saved_by           TEXT NOT NULL,
    restored_from      INTEGER,
    created_at         DATETIME NOT NULL,
    UNIQUE (binding_id, version)
);

CREATE TABLE bundles (
    id           TEXT NOT NULL,
    version      INTEGER NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    sha256       TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL,
    storage_key  TEXT NOT NULL,
    created_at   DATETIME NOT NULL,
    PRIMARY KEY (id, version)
);

CREATE TABLE blobs (
    key        TEXT PRIMARY KEY,
    content    BLOB NOT NULL,
    created_at DATETIME NOT NULL
);

CREATE TABLE configured_tools (
    id                   TEXT PRIMARY KEY,
    workspace_id         TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id             TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    display_name         TEXT NOT NULL,
    base_tool            TEXT NOT NULL,
    config               JSON,
    bundle_id            TEXT,
    bundle_version       INTEGER,
    binding_id           TEXT REFERENCES bindings (id) ON DELETE RESTRICT,
    producer_tool_id     TEXT REFERENCES configured_tools (id) ON DELETE SET NULL,
    integration_id       TEXT REFERENCES integrations (id) ON DELETE RESTRICT,
    action_schema        JSON,
    theme                JSON,
    default_fullscreen   BOOLEAN NOT NULL DEFAULT false,
    await_review         BOOLEAN NOT NULL DEFAULT false,
    input_schema         JSON,
    await_expiry_seconds INTEGER,
    created_at           DATETIME NOT NULL,
    updated_at           DATETIME NOT NULL,
    UNIQUE (agent_id, display_name)
);

CREATE TABLE tasks (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id         TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    title            TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('running', 'waiting_for_input', 'completed', 'failed')),
    priority         REAL NOT NULL DEFAULT 0,
    claimed_by       TEXT REFERENCES users (id) ON DELETE SET NULL,
    claim_expires_at DATETIME,
    assigned_to      TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL
);
CREATE INDEX tasks_workspace_status ON tasks (workspace_id, status);

CREATE TABLE steps (
    id                 TEXT PRIMARY KEY,
    task_id            TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    parent_step_id     TEXT REFERENCES steps (id) ON DELETE CASCADE,
    kind               TEXT NOT NULL,
    configured_tool_id TEXT REFERENCES configured_tools (id) ON DELETE SET NULL,
    status             TEXT NOT NULL,
    input              JSON,
    output             JSON,
    error              TEXT NOT NULL DEFAULT '',
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL
);
CREATE INDEX steps_task ON steps (task_id);

CREATE TABLE task_awaits (
    id              TEXT PRIMARY KEY,
    task_id         TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    source_type     TEXT NOT NULL,
    correlation_key TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'resolved', 'aborted')),
    reason          TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    resolved_at     DATETIME,
    resolved_by     TEXT NOT NULL DEFAULT '',
    UNIQUE (task_id, source_type, correlation_key)
);

CREATE TABLE feed_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id    TEXT REFERENCES steps (id) ON DELETE SET NULL,
    type       TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    payload    JSON,
    actor      TEXT NOT NULL DEFAULT '',
    dedupe_key TEXT UNIQUE,
    created_at DATETIME NOT NULL
);
CREATE INDEX feed_events_task ON feed_events (task_id, id);

CREATE TABLE agent_key_values (
    id         TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      JSON,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL,
    UNIQUE (task_id, key)
);

CREATE TABLE files (
    id           TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    content_type TEXT NOT NULL,
    pages        INTEGER NOT NULL DEFAULT 0,
    size         INTEGER NOT NULL DEFAULT 0,
    storage_key  TEXT NOT NULL,
    created_at   DATETIME NOT NULL
);
CREATE INDEX files_task ON files (task_id);

CREATE TABLE translations (
    id              TEXT PRIMARY KEY,
    file_id         TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    page            INTEGER NOT NULL,
    target_language TEXT NOT NULL,
    granularity     TEXT NOT NULL,
    content         JSON,
    created_at      DATETIME NOT NULL,
    UNIQUE (file_id, page, target_language, granularity)
);

CREATE TABLE usage_records (
    id         TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id    TEXT NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    tool       TEXT NOT NULL,
    units      REAL NOT NULL,
    rate       REAL NOT NULL,
    created_at DATETIME NOT NULL
);

CREATE TABLE app_sessions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id      TEXT NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    user_id      TEXT REFERENCES users (id) ON DELETE SET NULL,
    expires_at   DATETIME NOT NULL,
    revoked_at   DATETIME,
    created_at   DATETIME NOT NULL
);
CREATE INDEX app_sessions_task ON app_sessions (task_id, created_at);

CREATE TABLE outbox (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    payload    JSON NOT NULL,
    created_at DATETIME NOT NULL,
    sent_at    DATETIME
);
CREATE INDEX outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;

CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    event_id    TEXT NOT NULL,
    agent_id    TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL
);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE audit_log (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    detail       JSON,
    created_at   DATETIME NOT NULL
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, created_at);
