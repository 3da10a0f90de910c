-- rota schema version 20 (PostgreSQL): a run has two homes (ADR 0027). rota_runs is
-- partitioned by state: rota_runs_live holds the runs a claim, a renewal, the reaper or a
-- workflow release still needs; rota_runs_history holds finished runs, itself
-- partitioned by finish time (a day a partition, made ahead by the leader; retention
-- drops whole partitions). A statement that finishes a run moves its row from one home
-- to the other (PostgreSQL's row movement: a delete and an insert in the same
-- statement), so a run is never in both or in neither, its id never changes, and every
-- query that names rota_runs reads both homes as before.
--
-- The upgrade copies no finished run: the table as it was becomes history's first
-- partition (rota_runs_history_upto_<day after today>), once its unfinished runs have
-- moved to the queue. Its cost grows with the backlog, not with the history kept.

ALTER TABLE rota_runs RENAME TO rota_runs_before_v20;
ALTER SEQUENCE rota_run_id_seq OWNED BY NONE;
DROP TRIGGER rota_runs_inserted ON rota_runs_before_v20;
-- Only history's indexes stay on it (the equal ones become the partition's, below).
DROP INDEX rota_runs_claimable, rota_runs_claimable_keyed, rota_runs_leased, rota_runs_due,
    rota_runs_deadline, rota_runs_active_groups, rota_runs_job_live, rota_runs_state_id,
    rota_runs_finished, rota_runs_idempotency;
ALTER INDEX rota_runs_handler_id RENAME TO rota_runs_before_v20_handler_id;
ALTER INDEX rota_runs_job_id RENAME TO rota_runs_before_v20_job_id;
ALTER INDEX rota_runs_workflow_step RENAME TO rota_runs_before_v20_workflow_step;
ALTER TABLE rota_runs_before_v20 RENAME CONSTRAINT rota_runs_pkey TO rota_runs_before_v20_pkey;

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
-- Rows no other partition takes (a day not made in time, a NULL finish time) land here;
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
INSERT INTO rota_idempotency_keys (namespace, handler, idempotency_key, run_id)
SELECT namespace, handler, idempotency_key, id FROM rota_runs_before_v20
WHERE idempotency_key IS NOT NULL;

-- The unfinished runs move to the queue; a finished run without a finish time (none is
-- written so, but a database may hold one) or past the first partition's end goes to
-- the default partition. What is left is history up to the end of today (UTC).
DO $$
DECLARE
    upto date := (now() AT TIME ZONE 'UTC')::date + 1;
    first_name text := 'rota_runs_history_upto_' || to_char(upto, 'YYYYMMDD');
BEGIN
    WITH moved AS (
        DELETE FROM rota_runs_before_v20
        WHERE state NOT IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'dead_lettered',
                            'skipped')
           OR finished_at IS NULL OR finished_at >= upto::timestamp AT TIME ZONE 'UTC'
        RETURNING *)
    INSERT INTO rota_runs SELECT * FROM moved;
    EXECUTE format('ALTER TABLE rota_runs_before_v20 RENAME TO %I', first_name);
    EXECUTE format('ALTER TABLE rota_runs_history ATTACH PARTITION %I'
                   ' FOR VALUES FROM (MINVALUE) TO (%L)',
                   first_name, upto::timestamp AT TIME ZONE 'UTC');
END
$$;

CREATE TRIGGER rota_runs_inserted AFTER INSERT ON rota_runs
    FOR EACH STATEMENT EXECUTE FUNCTION rota_notify_inserted();

-- Day partitions of history: made ahead (the leader calls this every housekeeping
-- round; idempotent). A day that overlaps a partition already there, or has rows in
-- the default partition already (making its partition would have to move them), is
-- left to the partitions that hold it.
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
        BEGIN
            EXECUTE format('CREATE TABLE %I PARTITION OF rota_runs_history'
                           ' FOR VALUES FROM (%L) TO (%L)',
                           name, day::timestamp AT TIME ZONE 'UTC',
                           (day + 1)::timestamp AT TIME ZONE 'UTC');
            made := made + 1;
        EXCEPTION
            WHEN invalid_object_definition OR check_violation THEN NULL;
        END;
    END LOOP;
    RETURN made;
END
$$;

-- Retention, a whole partition at a time: one that ended before older_than goes with
-- its runs' attempts, logs and keys (a DROP: no dead rows left for VACUUM). One that
-- still holds a step of a workflow run that is kept waits for it (a workflow's steps go
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
        SELECT name, ends FROM (
            SELECT c.relname AS name,
                   CASE WHEN c.relname ~ '^rota_runs_history_[0-9]{8}$'
                        THEN to_date(right(c.relname, 8), 'YYYYMMDD') + 1
                        WHEN c.relname ~ '^rota_runs_history_upto_[0-9]{8}$'
                        THEN to_date(right(c.relname, 8), 'YYYYMMDD') END AS ends
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'rota_runs_history'::regclass) AS p
        WHERE ends IS NOT NULL
        ORDER BY ends
    LOOP
        EXIT WHEN part.ends::timestamp AT TIME ZONE 'UTC' > older_than;
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

SELECT rota_make_history_days((now() AT TIME ZONE 'UTC')::date + 1, 3);
