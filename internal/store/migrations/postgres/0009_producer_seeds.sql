-- A producer's seeding journal (runtime.Service.Seed): the data-source
-- transaction that wrote an artifact step's rows, committed here before that
-- transaction commits there. A retried producer asks the data source what
-- became of it (txid_status) instead of seeding twice. Deleted when the
-- step settles.
CREATE TABLE producer_seeds (
    step_id    uuid PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    source_tx  text NOT NULL,
    rows       bigint NOT NULL,
    created_at timestamptz NOT NULL
);
