-- Waiting work is told and escalated (docs/admins.md#notifications-of-waiting-work):
-- a review pool's wait threshold (a digest of the tasks waiting longer goes
-- to its webhook and/or email addresses), its escalation threshold and the
-- pool a task waiting longer moves to; when a task reached the pool it is in
-- (null: when it was parked); the waits already told (a task's await is in
-- at most one digest per pool); and the digests themselves, each delivery a
-- row with its attempts and next attempt's time (Postgres records, the
-- worker's notify pass carries). And the console's task list filters by
-- agent through an index of its own.
ALTER TABLE review_pools ADD COLUMN wait_threshold_seconds INTEGER
    CHECK (wait_threshold_seconds BETWEEN 60 AND 2592000);
ALTER TABLE review_pools ADD COLUMN escalate_after_seconds INTEGER
    CHECK (escalate_after_seconds BETWEEN 60 AND 2592000);
ALTER TABLE review_pools ADD COLUMN escalate_to_pool_id TEXT REFERENCES review_pools (id) ON DELETE SET NULL;
ALTER TABLE review_pools ADD COLUMN notify_webhook_url TEXT NOT NULL DEFAULT '';
ALTER TABLE review_pools ADD COLUMN notify_webhook_secret_enc BLOB;
ALTER TABLE review_pools ADD COLUMN notify_emails TEXT NOT NULL DEFAULT '';
CREATE INDEX review_pools_watched ON review_pools (id)
    WHERE wait_threshold_seconds IS NOT NULL OR escalate_after_seconds IS NOT NULL;

ALTER TABLE task_review_pools ADD COLUMN routed_at DATETIME;

CREATE TABLE review_pool_notices (
    pool_id     TEXT NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    await_id    TEXT NOT NULL REFERENCES task_awaits (id) ON DELETE CASCADE,
    notified_at DATETIME NOT NULL,
    PRIMARY KEY (pool_id, await_id)
);
CREATE INDEX review_pool_notices_await ON review_pool_notices (await_id);

CREATE TABLE review_pool_digests (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    pool_id         TEXT NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    channel         TEXT NOT NULL CHECK (channel IN ('webhook', 'email')),
    target          TEXT NOT NULL,
    body            TEXT NOT NULL,
    task_count      INTEGER NOT NULL,
    attempt         INTEGER NOT NULL DEFAULT 0,
    status_code     INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    next_attempt_at DATETIME,
    delivered_at    DATETIME
);
CREATE INDEX review_pool_digests_due ON review_pool_digests (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX review_pool_digests_pool ON review_pool_digests (pool_id, created_at);

CREATE INDEX tasks_workspace_agent_created ON tasks (workspace_id, agent_id, created_at DESC, id DESC);
