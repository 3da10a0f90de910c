-- rota schema version 3 (SQLite): claim-time controls (tags, concurrency limits,
-- start-by deadlines), the worker registry, and request correlation ids on runs.
-- Lists (tags, queues) are JSON arrays.

ALTER TABLE rota_runs ADD COLUMN tags TEXT;  -- NULL when the run needs no tags
ALTER TABLE rota_runs ADD COLUMN concurrency_key TEXT;
ALTER TABLE rota_runs ADD COLUMN concurrency_limit INTEGER CHECK (concurrency_limit >= 1);
ALTER TABLE rota_runs ADD COLUMN deadline REAL;
ALTER TABLE rota_runs ADD COLUMN correlation_id TEXT;

CREATE INDEX rota_runs_active_groups ON rota_runs (concurrency_key)
    WHERE state IN ('claimed', 'running') AND concurrency_key IS NOT NULL;
CREATE INDEX rota_runs_deadline ON rota_runs (deadline)
    WHERE deadline IS NOT NULL AND state IN ('pending', 'retrying');

CREATE TABLE rota_limits (
    scope        TEXT NOT NULL CHECK (scope IN ('global', 'queue', 'handler')),
    name         TEXT NOT NULL,
    max_running  INTEGER NOT NULL CHECK (max_running >= 1),
    PRIMARY KEY (scope, name)
);

CREATE TABLE rota_workers (
    node_id      TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    queues       TEXT NOT NULL,
    tags         TEXT NOT NULL,
    concurrency  INTEGER NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('active', 'draining', 'dead')),
    started_at   REAL NOT NULL,
    heartbeat_at REAL NOT NULL
);

DROP INDEX rota_runs_claimable;
CREATE INDEX rota_runs_claimable ON rota_runs (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL;
CREATE INDEX rota_runs_claimable_keyed ON rota_runs (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL;
