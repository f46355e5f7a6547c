-- Preview sessions (docs/architecture.md#preview-sessions): an admin previews
-- a bundle version against a binding of the workspace with a session that is
-- on no task. Such a row has kind 'preview', the binding it reads through and
-- no task or step; every other row stays a task's ('task', task and step set).
ALTER TABLE app_sessions ALTER COLUMN task_id DROP NOT NULL;
ALTER TABLE app_sessions ALTER COLUMN step_id DROP NOT NULL;
ALTER TABLE app_sessions ADD COLUMN kind text NOT NULL DEFAULT 'task' CHECK (kind IN ('task', 'preview'));
ALTER TABLE app_sessions ADD COLUMN binding_id uuid REFERENCES bindings (id) ON DELETE CASCADE;
ALTER TABLE app_sessions ADD CONSTRAINT app_sessions_kind_scope CHECK (
    (kind = 'task' AND task_id IS NOT NULL AND step_id IS NOT NULL)
    OR (kind = 'preview' AND task_id IS NULL AND step_id IS NULL AND binding_id IS NOT NULL));
CREATE INDEX app_sessions_preview ON app_sessions (workspace_id, expires_at) WHERE kind = 'preview';
