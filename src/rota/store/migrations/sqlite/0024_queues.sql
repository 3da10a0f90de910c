-- rota schema version 24 (SQLite): queues you operate (issue 29, ADR 0035). A row per
-- queue an operator has acted on: whether it is paused, since when and by whom. A queue
-- no one has acted on has no row and is not paused; its concurrency limit stays where
-- every cap lives (rota_limits, scope 'queue').

CREATE TABLE rota_queues (
    name       TEXT PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    paused_at  REAL,
    paused_by  TEXT
);
