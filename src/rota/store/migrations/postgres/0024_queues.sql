-- rota schema version 24 (PostgreSQL): queues you operate (issue 29, ADR 0035). A row
-- per queue an operator has acted on: whether it is paused, since when and by whom. A
-- queue no one has acted on has no row and is not paused; its concurrency limit stays
-- where every cap lives (rota_limits, scope 'queue').

CREATE TABLE rota_queues (
    name       text PRIMARY KEY,
    paused     boolean NOT NULL DEFAULT false,
    paused_at  timestamptz,
    paused_by  text
);
