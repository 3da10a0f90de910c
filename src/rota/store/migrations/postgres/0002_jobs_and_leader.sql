-- rota schema version 2 (PostgreSQL): jobs (with optional schedules) and leader leases.

CREATE TABLE rota_jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace    text NOT NULL,
    name         text NOT NULL,
    spec         jsonb NOT NULL,      -- the JobSpec: handler, payload, options, trigger
    paused       boolean NOT NULL DEFAULT false,
    cursor       timestamptz NOT NULL, -- every slot at or before it has been decided
    next_fire_at timestamptz,          -- the next slot after the cursor; NULL: none
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (namespace, name)
);
CREATE INDEX rota_jobs_due ON rota_jobs (next_fire_at) WHERE NOT paused;

ALTER TABLE rota_runs ADD COLUMN job_id bigint, ADD COLUMN slot_at timestamptz;
CREATE INDEX rota_runs_job_live ON rota_runs (job_id, state)
    WHERE job_id IS NOT NULL AND state IN ('pending', 'retrying', 'claimed', 'running');
CREATE INDEX rota_runs_job_id ON rota_runs (job_id, id) WHERE job_id IS NOT NULL;

-- One row per elected role. term only grows: it fences the holder's writes.
CREATE TABLE rota_leases (
    name        text PRIMARY KEY,
    holder      text NOT NULL,
    term        bigint NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
