-- Issue 12, agent tools (seed 003) and app blocks (seed 004): an agent's
-- tool declarations, each call of one (with the pending-input card that
-- parks its task), the HTML assets an agent uploads for app blocks, and
-- the replies that carry them.
CREATE TABLE agent_tool_declarations (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id     uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name         text NOT NULL,
    display_name text NOT NULL,
    description  text NOT NULL,
    input        jsonb NOT NULL,
    target       jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (agent_id, name)
);

CREATE TABLE tool_calls (
    id               uuid PRIMARY KEY,
    task_id          uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id          uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    agent_id         uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    declaration_id   uuid REFERENCES agent_tool_declarations (id) ON DELETE SET NULL,
    name             text NOT NULL,
    input            jsonb NOT NULL,
    status           text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'pending_input', 'clicking')),
    result           jsonb,
    card             jsonb,
    producer         text NOT NULL DEFAULT '',
    error            text NOT NULL DEFAULT '',
    clicked_button   text NOT NULL DEFAULT '',
    clicked_by       text NOT NULL DEFAULT '',
    click_expires_at timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX tool_calls_task ON tool_calls (task_id, created_at);

CREATE TABLE agent_assets (
    id           text PRIMARY KEY CHECK (id ~ '^ast_[0-9A-HJKMNP-TV-Z]{26}$'),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id     uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    sha256       text NOT NULL,
    size         bigint NOT NULL,
    storage_key  text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX agent_assets_agent ON agent_assets (agent_id, created_at);

CREATE TABLE task_replies (
    id         uuid PRIMARY KEY,
    task_id    uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_id   uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    final      boolean NOT NULL,
    blocks     jsonb NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX task_replies_task ON task_replies (task_id, created_at);
