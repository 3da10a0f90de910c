-- rota schema version 10 (PostgreSQL): workflows (DESIGN.md "Workflows", ADR 0018).
-- A workflow run is a row of rota_workflow_runs holding its definition as it was when
-- it started; each step is a run in rota_runs, tagged with its workflow run and step
-- name (a map's items also with their index). Steps whose parents have not decided
-- them are 'waiting', which no claim index covers.

ALTER TABLE rota_runs DROP CONSTRAINT rota_runs_state_check;
ALTER TABLE rota_runs ADD CONSTRAINT rota_runs_state_check CHECK (state IN (
    'pending', 'claimed', 'running', 'succeeded', 'failed', 'retrying',
    'timed_out', 'cancelled', 'dead_lettered', 'waiting', 'skipped'));

ALTER TABLE rota_runs ADD COLUMN workflow_run_id bigint;
ALTER TABLE rota_runs ADD COLUMN step_name text;
ALTER TABLE rota_runs ADD COLUMN map_index integer;  -- NULL except on a map's items
-- On a map's own row: how many of its items are unfinished (NULL before it fans out).
ALTER TABLE rota_runs ADD COLUMN open_items integer;
-- What a released step's handler sees as ctx.parents and ctx.workflow_payload.
ALTER TABLE rota_runs ADD COLUMN step_input jsonb;

CREATE INDEX rota_runs_workflow_step ON rota_runs (workflow_run_id, step_name, map_index)
    WHERE workflow_run_id IS NOT NULL;

CREATE TABLE rota_workflow_runs (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL,
    definition   jsonb NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    cancelled_at timestamptz
);
CREATE INDEX rota_workflow_runs_name ON rota_workflow_runs (name, id);
