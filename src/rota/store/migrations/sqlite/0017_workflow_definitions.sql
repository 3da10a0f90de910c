-- rota schema version 17 (SQLite): workflow definitions kept in the database, so any
-- process (the API server, the CLI through it, a leader's planner) can start a workflow
-- by name; and workflow runs carry the namespace they (and their steps) run in
-- (DESIGN.md "Workflows", ADR 0022).

CREATE TABLE rota_workflows (
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    definition TEXT NOT NULL,          -- WorkflowDefinition.to_json(), checked before it is saved
    version    INTEGER NOT NULL,       -- 1, then +1 each time the definition changes
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,          -- when the definition last changed
    PRIMARY KEY (namespace, name)
);

-- Every workflow run so far ran its steps in the default namespace.
ALTER TABLE rota_workflow_runs ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';

-- A starter that may run twice (a schedule's starting run retried after a crash, an
-- event delivered again) names its start: the same key starts one workflow run.
ALTER TABLE rota_workflow_runs ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX rota_workflow_runs_idempotency
    ON rota_workflow_runs (namespace, name, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
