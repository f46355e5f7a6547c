-- An email is unique within a workspace, not across workspaces (see
-- postgres/0003). SQLite cannot drop a column's UNIQUE, so the table is
-- rebuilt; the runner turns foreign keys off around it and checks them
-- before the commit.
CREATE TABLE users_rebuilt (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email         TEXT NOT NULL,
    name          TEXT NOT NULL DEFAULT '',
    role          TEXT NOT NULL CHECK (role IN ('admin', 'reviewer')),
    password_hash TEXT NOT NULL,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL
);
INSERT INTO users_rebuilt (id, workspace_id, email, name, role, password_hash, created_at, updated_at)
    SELECT id, workspace_id, email, name, role, password_hash, created_at, updated_at FROM users;
DROP TABLE users;
ALTER TABLE users_rebuilt RENAME TO users;
CREATE UNIQUE INDEX users_workspace_email ON users (workspace_id, email);
CREATE INDEX users_email ON users (lower(email));
