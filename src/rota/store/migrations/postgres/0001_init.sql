-- rota schema version 1 (PostgreSQL).
-- rota_runs is the hot table. Only claimable rows are in the claim index (partial), so
-- finished runs cost the claim nothing; autovacuum is tuned per table because every
-- claim and completion leaves a dead tuple behind.

CREATE SEQUENCE rota_run_id_seq AS bigint;

CREATE TABLE rota_runs (
    id               bigint PRIMARY KEY DEFAULT nextval('rota_run_id_seq'),
    namespace        text NOT NULL DEFAULT 'default',
    handler          text NOT NULL,
    queue            text NOT NULL DEFAULT 'default',
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN (
                         'pending', 'claimed', 'running', 'succeeded', 'failed', 'retrying',
                         'timed_out', 'cancelled', 'dead_lettered')),
    payload          jsonb NOT NULL,
    priority         smallint NOT NULL DEFAULT 5 CHECK (priority BETWEEN 1 AND 10),
    run_at           timestamptz NOT NULL,
    -- run_at minus the priority boost: ordering by sort_at is ordering by effective
    -- priority with linear aging, and an index can serve it.
    sort_at          timestamptz NOT NULL,
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
    fence            bigint NOT NULL DEFAULT 0,
    timeout_seconds  double precision CHECK (timeout_seconds > 0),
    worker_id        text,
    lease_expires_at timestamptz,
    idempotency_key  text,
    result           jsonb,
    error            text,
    cancel_requested boolean NOT NULL DEFAULT false,
    lost_count       integer NOT NULL DEFAULT 0,
    replay_of        bigint,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
) WITH (
    fillfactor = 85,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.02
);

ALTER SEQUENCE rota_run_id_seq OWNED BY rota_runs.id;

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

-- One row per finished attempt, keyed by fence: a fence is one claim, so an outcome can
-- be recorded for it at most once, and a retried (ambiguous) completion can check it.
CREATE TABLE rota_attempts (
    run_id      bigint NOT NULL,
    fence       bigint NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text,
    started_at  timestamptz,
    finished_at timestamptz NOT NULL,
    outcome     text NOT NULL,
    error       text,
    PRIMARY KEY (run_id, fence)
) WITH (autovacuum_vacuum_scale_factor = 0.02);

CREATE TABLE rota_run_logs (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id  bigint NOT NULL,
    attempt integer NOT NULL,
    at      timestamptz NOT NULL,
    level   text NOT NULL,
    message text NOT NULL,
    fields  jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX rota_run_logs_run ON rota_run_logs (run_id, id);

-- One NOTIFY per statement (not per row), whatever inserted the runs: our enqueue, a
-- COPY, or a user's own transaction. Delivered at commit, so never before the rows exist.
CREATE FUNCTION rota_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rota_wakeup', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER rota_runs_inserted AFTER INSERT ON rota_runs
    FOR EACH STATEMENT EXECUTE FUNCTION rota_notify_inserted();
