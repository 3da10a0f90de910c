-- rota schema version 20 (PostgreSQL): a run has two homes (ADR 0027). rota_runs is
-- partitioned by state: rota_runs_live holds the runs a claim, a renewal, the reaper or a
-- workflow release still needs; rota_runs_history holds finished runs, itself
-- partitioned by finish time (a day a partition, made ahead by the leader; retention
-- drops whole partitions). A statement that finishes a run moves its row from one home
-- to the other (PostgreSQL's row movement: a delete and an insert in the same
-- statement), so a run is never in both or in neither, its id never changes, and every
-- query that names rota_runs reads both homes as before.

-- The runs as they are, under another name, until copied below.
ALTER TABLE rota_runs RENAME TO rota_runs_before_v20;
ALTER SEQUENCE rota_run_id_seq OWNED BY NONE;
DROP TRIGGER rota_runs_inserted ON rota_runs_before_v20;
DO $$
DECLARE index_name text;
BEGIN
    FOR index_name IN SELECT indexname FROM pg_indexes
                      WHERE tablename = 'rota_runs_before_v20' LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', index_name, index_name || '_before_v20');
    END LOOP;
END
$$;

CREATE TABLE rota_runs (LIKE rota_runs_before_v20 INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY LIST (state);
ALTER SEQUENCE rota_run_id_seq OWNED BY rota_runs.id;

-- The queue: small and churned. Its storage settings are rota_runs' before (migration
-- 1): aggressive per-table autovacuum keeps it lean on a stock server (a vacuum after 1%
-- of it changed, no cost delay), and room left in each page lets a renewal's update
-- stay on its page (HOT).
CREATE TABLE rota_runs_live PARTITION OF rota_runs
    FOR VALUES IN ('pending', 'claimed', 'running', 'retrying', 'waiting')
    WITH (fillfactor = 85,
          autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
          autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

-- History: appended to, read by id and listings, retired a day at a time.
CREATE TABLE rota_runs_history PARTITION OF rota_runs
    FOR VALUES IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'dead_lettered', 'skipped')
    PARTITION BY RANGE (finished_at);
-- Rows no day partition takes (a day not made yet, a NULL finish time) land here;
-- retention deletes them in batches.
CREATE TABLE rota_runs_history_default PARTITION OF rota_runs_history DEFAULT;

-- A run by id: the queue's primary key, and history's own index (a unique index on a
-- partitioned table must name the partition keys; ids come from one sequence).
ALTER TABLE rota_runs_live ADD CONSTRAINT rota_runs_live_pkey PRIMARY KEY (id);
CREATE INDEX rota_runs_history_id ON rota_runs_history (id);
-- Both homes: a job's and a workflow's runs (a workflow release reads its steps in
-- either home).
CREATE INDEX rota_runs_job_id ON rota_runs (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX rota_runs_workflow_step ON rota_runs (workflow_run_id, step_name, map_index)
    WHERE workflow_run_id IS NOT NULL;

-- The queue only: what claims, renewals, the reaper and the planner read.
CREATE INDEX rota_runs_claimable ON rota_runs_live (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL;
CREATE INDEX rota_runs_claimable_keyed ON rota_runs_live (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL;
CREATE INDEX rota_runs_leased ON rota_runs_live (id) WHERE state IN ('claimed', 'running');
CREATE INDEX rota_runs_due ON rota_runs_live (run_at) WHERE state IN ('pending', 'retrying');
CREATE INDEX rota_runs_deadline ON rota_runs_live (deadline)
    WHERE deadline IS NOT NULL AND state IN ('pending', 'retrying');
CREATE INDEX rota_runs_active_groups ON rota_runs_live (concurrency_key)
    WHERE state IN ('claimed', 'running') AND concurrency_key IS NOT NULL;
CREATE INDEX rota_runs_job_live ON rota_runs_live (job_id, state) WHERE job_id IS NOT NULL;
CREATE INDEX rota_runs_live_state_id ON rota_runs_live (state, id)
    INCLUDE (namespace, queue, run_at) WHERE state IN ('pending', 'retrying', 'waiting');

-- History only: listings and counts by state and by handler (the queue's few matching
-- runs are sorted instead: an index entry less per enqueue and per move), and the
-- per-minute rollup's reads.
CREATE INDEX rota_runs_state_id ON rota_runs_history (state, id)
    INCLUDE (namespace, queue, run_at);
CREATE INDEX rota_runs_handler_id ON rota_runs_history (handler, id);
CREATE INDEX rota_runs_finished ON rota_runs_history (finished_at);

-- An idempotency key names one run across both homes for as long as the run is kept:
-- a unique index on a partitioned table must include the partition key, so the keys
-- live in a table of their own, written in the statement that creates the run.
CREATE TABLE rota_idempotency_keys (
    namespace       text NOT NULL,
    handler         text NOT NULL,
    idempotency_key text NOT NULL,
    run_id          bigint NOT NULL,
    PRIMARY KEY (namespace, handler, idempotency_key)
);
CREATE INDEX rota_idempotency_keys_run ON rota_idempotency_keys (run_id);

INSERT INTO rota_runs SELECT * FROM rota_runs_before_v20;
INSERT INTO rota_idempotency_keys (namespace, handler, idempotency_key, run_id)
SELECT namespace, handler, idempotency_key, id FROM rota_runs_before_v20
WHERE idempotency_key IS NOT NULL;
DROP TABLE rota_runs_before_v20;

CREATE TRIGGER rota_runs_inserted AFTER INSERT ON rota_runs
    FOR EACH STATEMENT EXECUTE FUNCTION rota_notify_inserted();

-- Day partitions of history: made ahead (the leader calls this every housekeeping
-- round; idempotent), and dropped whole by retention. A day that already has rows in
-- the default partition is left there (making its partition would have to move them).
CREATE FUNCTION rota_make_history_days(first_day date, days integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    day date;
    made integer := 0;
    name text;
BEGIN
    FOR i IN 0 .. days - 1 LOOP
        day := first_day + i;
        name := 'rota_runs_history_' || to_char(day, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(name) IS NOT NULL;
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM rota_runs_history_default
            WHERE finished_at >= day::timestamp AT TIME ZONE 'UTC'
              AND finished_at < (day + 1)::timestamp AT TIME ZONE 'UTC');
        EXECUTE format('CREATE TABLE %I PARTITION OF rota_runs_history'
                       ' FOR VALUES FROM (%L) TO (%L)',
                       name, day::timestamp AT TIME ZONE 'UTC',
                       (day + 1)::timestamp AT TIME ZONE 'UTC');
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;

-- Retention, a whole day at a time: a day partition that ended before older_than goes
-- with its runs' attempts, logs and keys (a DROP: no dead rows left for VACUUM). A day
-- that still holds a step of a kept workflow run waits for it (a workflow's steps go
-- with their workflow run). The coming days are made first. The runs retired.
CREATE FUNCTION rota_retire_history(older_than timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    part record;
    runs bigint;
    kept boolean;
    retired bigint := 0;
BEGIN
    PERFORM rota_make_history_days((now() AT TIME ZONE 'UTC')::date, 3);
    FOR part IN
        SELECT c.relname AS name, to_date(substr(c.relname, 19), 'YYYYMMDD') AS day
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'rota_runs_history'::regclass
          AND c.relname ~ '^rota_runs_history_[0-9]{8}$'
        ORDER BY 2
    LOOP
        EXIT WHEN (part.day + 1)::timestamp AT TIME ZONE 'UTC' > older_than;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I p JOIN rota_workflow_runs w'
                       ' ON w.id = p.workflow_run_id)', part.name) INTO STRICT kept;
        CONTINUE WHEN kept;
        EXECUTE format('DELETE FROM rota_attempts WHERE run_id IN (SELECT id FROM %I)', part.name);
        EXECUTE format('DELETE FROM rota_run_logs WHERE run_id IN (SELECT id FROM %I)', part.name);
        EXECUTE format('DELETE FROM rota_idempotency_keys WHERE run_id IN'
                       ' (SELECT id FROM %I WHERE idempotency_key IS NOT NULL)', part.name);
        EXECUTE format('SELECT count(*) FROM %I', part.name) INTO STRICT runs;
        EXECUTE format('DROP TABLE %I', part.name);
        retired := retired + runs;
    END LOOP;
    RETURN retired;
END
$$;

SELECT rota_make_history_days((now() AT TIME ZONE 'UTC')::date - 1, 5);
