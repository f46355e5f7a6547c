-- The review queue routes work (docs/admins.md#review-pools-and-the-claim-limit):
-- a workspace's per-reviewer claim limit; reviewer pools with their members;
-- the pools an admin assigns an agent; and the pools a parked task took from
-- its agent when it was parked (none: any reviewer of the workspace).
-- Numbered 0019 to leave 0017-0018 to the branches written beside it.
ALTER TABLE workspaces ADD COLUMN review_claim_limit integer NOT NULL DEFAULT 1
    CHECK (review_claim_limit BETWEEN 1 AND 100);

CREATE TABLE review_pools (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         text NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE review_pool_members (
    pool_id uuid NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (pool_id, user_id)
);
CREATE INDEX review_pool_members_user ON review_pool_members (user_id, pool_id);

CREATE TABLE agent_review_pools (
    agent_id uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    pool_id  uuid NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    PRIMARY KEY (agent_id, pool_id)
);
CREATE INDEX agent_review_pools_pool ON agent_review_pools (pool_id);

CREATE TABLE task_review_pools (
    task_id uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    pool_id uuid NOT NULL REFERENCES review_pools (id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, pool_id)
);
CREATE INDEX task_review_pools_pool ON task_review_pools (pool_id, task_id);
