-- The write guarantee's bookkeeping, cheaper per write (README, "The write
-- guarantee"). Measured on the platform's Postgres, per /write: an intent
-- row of its own (heap row, key, its delete later) and the feed row's two
-- foreign-key checks cost about 20 of the 50 µs of CPU the platform's
-- statements took.
--
-- One row holds the intents opened together (a batch, one durable commit)
-- as one text value; each intent's feed row names it (feed_events.intent_id),
-- which is how a sweep tells an intent recorded from one cut off, and the
-- batch row goes once every intent of it is recorded or dropped.
-- write_intents stays for the intents of processes from before: a sweep
-- still records those.
CREATE TABLE write_intent_batches (
    id         uuid PRIMARY KEY,
    owner      uuid NOT NULL,
    created_at timestamptz NOT NULL,
    feed_after bigint NOT NULL,
    intents    text NOT NULL
);
-- A batch's records (a few KB) are compressed with lz4 where the server
-- has it: pglz cost the open a few µs more a write, measured.
DO $$
BEGIN
    ALTER TABLE write_intent_batches ALTER COLUMN intents SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    NULL; -- a server built without lz4 keeps its default
END $$;

ALTER TABLE feed_events ADD COLUMN intent_id uuid;

-- The feed's foreign keys become triggers on the rare deletes: a task's
-- feed rows go with it (a workspace's or an agent's delete cascades to its
-- tasks, and so here), a step's delete clears the step of its task's rows.
-- Every writer of feed rows checks, in the statement that takes the task's
-- feed lock, that the task is there and keeps it there until it commits
-- (FOR KEY SHARE: a concurrent delete waits, or went first and the row is
-- not written), which is what the task's key did on each row.
ALTER TABLE feed_events DROP CONSTRAINT feed_events_task_id_fkey;
ALTER TABLE feed_events DROP CONSTRAINT feed_events_step_id_fkey;

CREATE FUNCTION feed_events_drop_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM feed_events WHERE task_id = OLD.id;
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_drop_feed_events AFTER DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION feed_events_drop_task();

CREATE FUNCTION feed_events_clear_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A step deleted with its task (the cascade) leaves nothing to clear.
    IF EXISTS (SELECT 1 FROM tasks WHERE id = OLD.task_id) THEN
        UPDATE feed_events SET step_id = NULL WHERE task_id = OLD.task_id AND step_id = OLD.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER steps_clear_feed_events AFTER DELETE ON steps
    FOR EACH ROW EXECUTE FUNCTION feed_events_clear_step();
