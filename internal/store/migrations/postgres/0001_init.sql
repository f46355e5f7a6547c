-- The platform schema: every table of ARCHITECTURE.md's data model.
CREATE TABLE workspaces (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE users (
    id            uuid PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email         text NOT NULL UNIQUE,
    name          text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('admin', 'reviewer')),
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE agents (
    id                           uuid PRIMARY KEY,
    workspace_id                 uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                         text NOT NULL,
    key_definitions              jsonb,
    summary_instructions         text NOT NULL DEFAULT '',
    priority_field               text NOT NULL DEFAULT '',
    document_translation_enabled boolean NOT NULL DEFAULT false,
    resume_webhook_url           text NOT NULL DEFAULT '',
    webhook_secret_enc           bytea,
    created_at                   timestamptz NOT NULL,
    updated_at                   timestamptz NOT NULL
);
CREATE INDEX agents_workspace ON agents (workspace_id);

CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    scope        text NOT NULL CHECK (scope IN ('host', 'agent', 'admin')),
    name         text NOT NULL DEFAULT '',
    token_hash   text NOT NULL UNIQUE,
    user_id      uuid REFERENCES users (id) ON DELETE CASCADE,
    agent_id     uuid REFERENCES agents (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE TABLE integrations (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         text NOT NULL,
    kind         text NOT NULL,
    base_url     text NOT NULL DEFAULT '',
    config       jsonb,
    secrets_enc  bytea,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX integrations_workspace ON integrations (workspace_id);

CREATE TABLE bindings (
    id                 uuid PRIMARY KEY,
    workspace_id       uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name               text NOT NULL,
    binding_kind       text NOT NULL,
    integration_id     uuid REFERENCES integrations (id) ON DELETE RESTRICT,
    allowed_operations jsonb NOT NULL,
    version            integer NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX bindings_workspace ON bindings (workspace_id);

CREATE TABLE binding_versions (
    id                 uuid PRIMARY KEY,
    binding_id         uuid NOT NULL REFERENCES bindings (id) ON DELETE CASCADE,
    version            integer NOT NULL,
    name               text NOT NULL,
    binding_kind       text NOT NULL,
    integration_id     uuid,
    allowed_operations jsonb NOT NULL,
    diff               jsonb,
    saved_by           text NOT NULL,
    restored_from      integer,
    created_at         timestamptz NOT NULL,
    UNIQUE (binding_id, version)
);

CREATE TABLE bundles (
    id           uuid NOT NULL,
    version      integer NOT NULL,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         text NOT NULL,
    sha256       text NOT NULL,
    content_type text NOT NULL,
    size         bigint NOT NULL,
    storage_key  text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (id, version)
);

CREATE TABLE blobs (
    key        text PRIMARY KEY,
    content    bytea NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE configured_tools (
    id                   uuid PRIMARY KEY,
    workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id             uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    display_name         text NOT NULL,
    base_tool            text NOT NULL,
    config               jsonb,
    bundle_id            uuid,
    bundle_version       integer,
    binding_id           uuid REFERENCES bindings (id) ON DELETE RESTRICT,
    producer_tool_id     uuid REFERENCES configured_tools (id) ON DELETE SET NULL,
    integration_id       uuid REFERENCES integrations (id) ON DELETE RESTRICT,
    action_schema        jsonb,
    theme                jsonb,
    default_fullscreen   boolean NOT NULL DEFAULT false,
    await_review         boolean NOT NULL DEFAULT false,
    input_schema         jsonb,
    await_expiry_seconds integer,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    UNIQUE (agent_id, display_name)
);

CREATE TABLE tasks (
    id               uuid PRIMARY KEY,
    workspace_id     uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id         uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    title            text NOT NULL DEFAULT '',
    status           text NOT NULL CHECK (status IN ('running', 'waiting_for_input', 'completed', 'failed')),
    priority         double precision NOT NULL DEFAULT 0,
    claimed_by       uuid REFERENCES users (id) ON DELETE SET NULL,
    claim_expires_at timestamptz,
    assigned_to      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX tasks_workspace_status ON tasks (workspace_id, status);

CREATE TABLE steps (
    id                 uuid PRIMARY KEY,
    task_id            uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    parent_step_id     uuid REFERENCES steps (id) ON DELETE CASCADE,
    kind               text NOT NULL,
    configured_tool_id uuid REFERENCES configured_tools (id) ON DELETE SET NULL,
    status             text NOT NULL,
    input              jsonb,
    output             jsonb,
    error              text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX steps_task ON steps (task_id);

CREATE TABLE task_awaits (
    id              uuid PRIMARY KEY,
    task_id         uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    source_type     text NOT NULL,
    correlation_key text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'resolved', 'aborted')),
    reason          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    resolved_at     timestamptz,
    resolved_by     text NOT NULL DEFAULT '',
    UNIQUE (task_id, source_type, correlation_key)
);

CREATE TABLE feed_events (
    id         bigserial PRIMARY KEY,
    task_id    uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id    uuid REFERENCES steps (id) ON DELETE SET NULL,
    type       text NOT NULL,
    name       text NOT NULL DEFAULT '',
    payload    jsonb,
    actor      text NOT NULL DEFAULT '',
    dedupe_key text UNIQUE,
    created_at timestamptz NOT NULL
);
CREATE INDEX feed_events_task ON feed_events (task_id, id);

CREATE TABLE agent_key_values (
    id         uuid PRIMARY KEY,
    task_id    uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    key        text NOT NULL,
    value      jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    UNIQUE (task_id, key)
);

CREATE TABLE files (
    id           uuid PRIMARY KEY,
    task_id      uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name         text NOT NULL,
    content_type text NOT NULL,
    pages        integer NOT NULL DEFAULT 0,
    size         bigint NOT NULL DEFAULT 0,
    storage_key  text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX files_task ON files (task_id);

CREATE TABLE translations (
    id              uuid PRIMARY KEY,
    file_id         uuid NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    page            integer NOT NULL,
    target_language text NOT NULL,
    granularity     text NOT NULL,
    content         jsonb,
    created_at      timestamptz NOT NULL,
    UNIQUE (file_id, page, target_language, granularity)
);

CREATE TABLE usage_records (
    id         uuid PRIMARY KEY,
    task_id    uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id    uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    tool       text NOT NULL,
    units      double precision NOT NULL,
    rate       double precision NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE app_sessions (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id      uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    user_id      uuid REFERENCES users (id) ON DELETE SET NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL
);
CREATE INDEX app_sessions_task ON app_sessions (task_id, created_at);

CREATE TABLE outbox (
    id         uuid PRIMARY KEY,
    kind       text NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    sent_at    timestamptz
);
CREATE INDEX outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;

CREATE TABLE webhook_deliveries (
    id          uuid PRIMARY KEY,
    event_id    uuid NOT NULL,
    agent_id    uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    task_id     uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    url         text NOT NULL,
    attempt     integer NOT NULL,
    status_code integer NOT NULL DEFAULT 0,
    error       text NOT NULL DEFAULT '',
    duration_ms bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE audit_log (
    id           uuid PRIMARY KEY,
    workspace_id uuid REFERENCES workspaces (id) ON DELETE CASCADE,
    actor        text NOT NULL,
    action       text NOT NULL,
    target_type  text NOT NULL,
    target_id    text NOT NULL,
    detail       jsonb,
    created_at   timestamptz NOT NULL
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, created_at);
