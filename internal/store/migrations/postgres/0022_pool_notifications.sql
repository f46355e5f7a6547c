-- Waiting work is told and escalated (docs/admins.md#notifications-of-waiting-work):
-- a review pool's wait threshold (a digest of the tasks waiting longer goes
-- to its webhook and/or email addresses), its escalation threshold and the
-- pool a task waiting longer moves to; when a task reached the pool it is in
-- (null: when it was parked); the waits already told (a task's await is in
-- at most one digest per pool); and the digests themselves, each delivery a
-- row with its attempts and next attempt's time (Postgres records, the
-- worker's notify pass carries). And the console's task list filters by
-- agent through an index of its own.
ALTER TABLE review_pools ADD COLUMN wait_threshold_seconds integer
    CHECK (wait_threshold_seconds BETWEEN 60 AND 2592000);
ALTER TABLE review_pools ADD COLUMN escalate_after_seconds integer
    CHECK (escalate_after_seconds BETWEEN 60 AND 2592000);
ALTER TABLE review_pools ADD COLUMN escalate_to_pool_id uuid REFERENCES review_pools (id) ON DELETE SET NULL;
ALTER TABLE review_pools ADD COLUMN notify_webhook_url text NOT NULL DEFAULT '';
ALTER TABLE review_pools ADD COLUMN notify_webhook_secret_enc bytea;
ALTER TABLE review_pools ADD COLUMN notify_emails text NOT NULL DEFAULT '';
CREATE INDEX review_pools_watched ON review_pools (id)
    WHERE wait_threshold_seconds IS NOT NULL OR escalate_after_seconds IS NOT NULL;

ALTER TABLE task_review_pools ADD COLUMN routed_at timestamptz;

CREATE TABLE review_pool_notices (
    pool_id     uuid NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    await_id    uuid NOT NULL REFERENCES task_awaits (id) ON DELETE CASCADE,
    notified_at timestamptz NOT NULL,
    PRIMARY KEY (pool_id, await_id)
);
CREATE INDEX review_pool_notices_await ON review_pool_notices (await_id);

CREATE TABLE review_pool_digests (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    pool_id         uuid NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    channel         text NOT NULL CHECK (channel IN ('webhook', 'email')),
    target          text NOT NULL,
    body            text NOT NULL,
    task_count      integer NOT NULL,
    attempt         integer NOT NULL DEFAULT 0,
    status_code     integer NOT NULL DEFAULT 0,
    error           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    next_attempt_at timestamptz,
    delivered_at    timestamptz
);
CREATE INDEX review_pool_digests_due ON review_pool_digests (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX review_pool_digests_pool ON review_pool_digests (pool_id, created_at);

CREATE INDEX tasks_workspace_agent_created ON tasks (workspace_id, agent_id, created_at DESC, id DESC);
