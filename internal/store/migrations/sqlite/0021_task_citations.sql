-- A task's citations (docs/architecture.md#data-model): what a tool result
-- cited (a file of the task by name, a page, the quoted text and, where
-- known, the box on the page as fractions of its width and height). The id
-- is the number a bundle passes to open_citation's citation_ids; run_id and
-- position make a run that is recorded twice store its citations once.
CREATE TABLE task_citations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    run_id     TEXT NOT NULL,
    position   INTEGER NOT NULL CHECK (position >= 0),
    file_name  TEXT NOT NULL,
    page       INTEGER NOT NULL CHECK (page >= 1),
    quote      TEXT NOT NULL,
    box        JSON,
    created_at DATETIME NOT NULL,
    UNIQUE (run_id, position)
);
CREATE INDEX task_citations_task ON task_citations (task_id, id);
