-- A bundle version's declared network grants (docs/bundle-authors.md#declaring-network-grants):
-- the origins it may connect to, load resources from and frame, in the MCP
-- Apps shape (JSON arrays of https origins), and an admin's decision on
-- them (docs/admins.md#approving-network-grants). One row per version that
-- declares anything; a new version's declaration is a new row, pending
-- until decided. Only an approved row widens the version's served CSP.
CREATE TABLE bundle_grants (
    bundle_id        uuid NOT NULL,
    version          integer NOT NULL,
    connect_domains  jsonb NOT NULL,
    resource_domains jsonb NOT NULL,
    frame_domains    jsonb NOT NULL,
    state            text NOT NULL CHECK (state IN ('pending', 'approved', 'refused', 'withdrawn')),
    decided_by       text,
    decided_at       timestamptz,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (bundle_id, version),
    FOREIGN KEY (bundle_id, version) REFERENCES bundles (id, version) ON DELETE CASCADE
);
