-- rota schema version 2 (SQLite): jobs (with optional schedules) and leader leases.

CREATE TABLE rota_jobs (
    id           INTEGER PRIMARY KEY,
    namespace    TEXT NOT NULL,
    name         TEXT NOT NULL,
    spec         TEXT NOT NULL,
    paused       INTEGER NOT NULL DEFAULT 0,
    cursor       REAL NOT NULL,
    next_fire_at REAL,
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL,
    UNIQUE (namespace, name)
);
CREATE INDEX rota_jobs_due ON rota_jobs (next_fire_at) WHERE NOT paused;

ALTER TABLE rota_runs ADD COLUMN job_id INTEGER;
ALTER TABLE rota_runs ADD COLUMN slot_at REAL;
CREATE INDEX rota_runs_job_live ON rota_runs (job_id, state)
    WHERE job_id IS NOT NULL AND state IN ('pending', 'retrying', 'claimed', 'running');
CREATE INDEX rota_runs_job_id ON rota_runs (job_id, id) WHERE job_id IS NOT NULL;

CREATE TABLE rota_leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    term        INTEGER NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at  REAL NOT NULL
);
