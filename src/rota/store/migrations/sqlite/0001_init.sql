-- rota schema version 1 (SQLite). Instants are REAL unix seconds (UTC).
-- Only claimable rows are in the claim index (partial), so finished runs cost the
-- claim nothing.

CREATE TABLE rota_runs (
    id               INTEGER PRIMARY KEY,
    namespace        TEXT NOT NULL DEFAULT 'default',
    handler          TEXT NOT NULL,
    queue            TEXT NOT NULL DEFAULT 'default',
    state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN (
                         'pending', 'claimed', 'running', 'succeeded', 'failed', 'retrying',
                         'timed_out', 'cancelled', 'dead_lettered')),
    payload          TEXT NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 5 CHECK (priority BETWEEN 1 AND 10),
    run_at           REAL NOT NULL,
    sort_at          REAL NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    fence            INTEGER NOT NULL DEFAULT 0,
    timeout_seconds  REAL CHECK (timeout_seconds > 0),
    worker_id        TEXT,
    lease_expires_at REAL,
    idempotency_key  TEXT,
    result           TEXT,
    error            TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    lost_count       INTEGER NOT NULL DEFAULT 0,
    replay_of        INTEGER,
    created_at       REAL NOT NULL,
    started_at       REAL,
    finished_at      REAL
);

CREATE INDEX rota_runs_claimable ON rota_runs (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying');
CREATE INDEX rota_runs_leased ON rota_runs (lease_expires_at)
    WHERE state IN ('claimed', 'running');
CREATE INDEX rota_runs_finished ON rota_runs (finished_at)
    WHERE finished_at IS NOT NULL;
CREATE INDEX rota_runs_state_id ON rota_runs (state, id);
CREATE INDEX rota_runs_handler_id ON rota_runs (handler, id);
CREATE UNIQUE INDEX rota_runs_idempotency ON rota_runs (namespace, handler, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE rota_attempts (
    run_id      INTEGER NOT NULL,
    fence       INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    worker_id   TEXT,
    started_at  REAL,
    finished_at REAL NOT NULL,
    outcome     TEXT NOT NULL,
    error       TEXT,
    PRIMARY KEY (run_id, fence)
) WITHOUT ROWID;

CREATE TABLE rota_run_logs (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    at      REAL NOT NULL,
    level   TEXT NOT NULL,
    message TEXT NOT NULL,
    fields  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX rota_run_logs_run ON rota_run_logs (run_id, id);
