-- Write intents opened together are one row (see the Postgres migration);
-- each intent's feed row names it. SQLite keeps the feed's foreign keys.
CREATE TABLE write_intent_batches (
    id         TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    feed_after INTEGER NOT NULL,
    intents    TEXT NOT NULL
);

ALTER TABLE feed_events ADD COLUMN intent_id TEXT;
