-- Issue 12, agent tools (seed 003) and app blocks (seed 004): an agent's
-- tool declarations, each call of one (with the pending-input card that
-- parks its task), the HTML assets an agent uploads for app blocks, and
-- the replies that carry them.
CREATE TABLE agent_tool_declarations (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id     TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    display_name TEXT NOT NULL,
    description  TEXT NOT NULL,
    input        JSON NOT NULL,
    target       JSON NOT NULL,
    created_at   DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL,
    UNIQUE (agent_id, name)
);

CREATE TABLE tool_calls (
    id               TEXT PRIMARY KEY,
    task_id          TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id          TEXT NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    agent_id         TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    declaration_id   TEXT REFERENCES agent_tool_declarations (id) ON DELETE SET NULL,
    name             TEXT NOT NULL,
    input            JSON NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'pending_input', 'clicking')),
    result           JSON,
    card             JSON,
    producer         TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    clicked_button   TEXT NOT NULL DEFAULT '',
    clicked_by       TEXT NOT NULL DEFAULT '',
    click_expires_at DATETIME,
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL
);
CREATE INDEX tool_calls_task ON tool_calls (task_id, created_at);

CREATE TABLE agent_assets (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id     TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    sha256       TEXT NOT NULL,
    size         INTEGER NOT NULL,
    storage_key  TEXT NOT NULL,
    created_at   DATETIME NOT NULL
);
CREATE INDEX agent_assets_agent ON agent_assets (agent_id, created_at);

CREATE TABLE task_replies (
    id         TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    final      BOOLEAN NOT NULL,
    blocks     JSON NOT NULL,
    created_at DATETIME NOT NULL
);
CREATE INDEX task_replies_task ON task_replies (task_id, created_at);
