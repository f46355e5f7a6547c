-- The console task list's search (docs/performance.md#the-console-task-list)
-- reads trigram indexes, so a search of 3 or more characters matching few
-- tasks no longer reads every task of the workspace. pg_trgm and btree_gin
-- are trusted extensions (Postgres 13+): a role with CREATE on the database
-- may create them. They go into public when this role may create there (so a
-- schema dropped later never takes them, and the indexes of other schemas,
-- with it), else into the current schema. Each index leads with the
-- workspace (or, for key details, the agent), so one workspace's search
-- never reads another's entries. Where the extensions cannot be created the
-- migration says so and creates no index; the search then reads only the
-- newest tasks of the list (task.SearchScanBound) and the console says so.
-- fastupdate is off: a search would otherwise also read the index's pending
-- list (up to gin_pending_list_limit of unsorted entries) until a vacuum
-- merges it; measured at 100,000 tasks, 184 ms against 23 ms after the merge.
DO $$
DECLARE
    ext_schema text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
       OR NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        ext_schema := CASE WHEN has_schema_privilege('public', 'CREATE') THEN 'public' ELSE current_schema() END;
        BEGIN
            EXECUTE format('CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA %I', ext_schema);
            EXECUTE format('CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA %I', ext_schema);
        EXCEPTION WHEN OTHERS THEN
            -- Another session may have created them meanwhile (a race on
            -- the catalog's unique keys): then they are there to use.
            IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
               OR NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
                RAISE WARNING 'appruntime: cannot create the pg_trgm and btree_gin extensions (%): the task list search reads only the newest tasks of each list', SQLERRM;
                RETURN;
            END IF;
        END;
    END IF;
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX tasks_search_title ON tasks USING gin (workspace_id, LOWER(title) %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
    EXECUTE format('CREATE INDEX tasks_search_id ON tasks USING gin (workspace_id, LOWER(CAST(id AS TEXT)) %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
    EXECUTE format('CREATE INDEX agent_key_values_search_key ON agent_key_values USING gin (agent_id, LOWER(key) %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
    EXECUTE format('CREATE INDEX agent_key_values_search_value ON agent_key_values USING gin (agent_id, LOWER(CAST(value AS TEXT)) %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
END $$;
