-- rota schema version 10 (SQLite): workflows (DESIGN.md "Workflows", ADR 0018).
-- A workflow run is a row of rota_workflow_runs holding its definition as it was when
-- it started; each step is a run in rota_runs, tagged with its workflow run and step
-- name (a map's items also with their index). Steps whose parents have not decided
-- them are 'waiting', which no claim index covers.

-- Two new run states. SQLite cannot alter a CHECK constraint; widening the allowed
-- list changes no stored row, so the documented writable_schema procedure applies
-- (https://sqlite.org/lang_altertable.html, "making other kinds of table schema
-- changes"): every existing row already satisfies the wider check.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, '''timed_out'', ''cancelled'', ''dead_lettered'')',
                  '''timed_out'', ''cancelled'', ''dead_lettered'', ''waiting'', ''skipped'')')
WHERE type = 'table' AND name = 'rota_runs';
PRAGMA writable_schema = RESET;

ALTER TABLE rota_runs ADD COLUMN workflow_run_id INTEGER;
ALTER TABLE rota_runs ADD COLUMN step_name TEXT;
ALTER TABLE rota_runs ADD COLUMN map_index INTEGER;  -- NULL except on a map's items
-- On a map's own row: how many of its items are unfinished (NULL before it fans out).
ALTER TABLE rota_runs ADD COLUMN open_items INTEGER;
-- What a released step's handler sees as ctx.parents and ctx.workflow_payload (JSON).
ALTER TABLE rota_runs ADD COLUMN step_input TEXT;

CREATE INDEX rota_runs_workflow_step ON rota_runs (workflow_run_id, step_name, map_index)
    WHERE workflow_run_id IS NOT NULL;

CREATE TABLE rota_workflow_runs (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    definition   TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   REAL NOT NULL,
    cancelled_at REAL
);
CREATE INDEX rota_workflow_runs_name ON rota_workflow_runs (name, id);
