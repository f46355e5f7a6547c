-- An email is unique within a workspace, not across workspaces: one person
-- may be a user of several, and creating a user never tells an admin
-- whether another workspace has the email. Sign-in finds every user with
-- the email and checks the password against each.
ALTER TABLE users DROP CONSTRAINT users_email_key;
CREATE UNIQUE INDEX users_workspace_email ON users (workspace_id, email);
CREATE INDEX users_email ON users (lower(email));
