-- rota schema version 30 (PostgreSQL): a run's attempts and log lines are kept a UTC day
-- a partition, as history is (issue 24, ADR 0027), so retention drops them whole. Before,
-- retiring a day of history deleted its attempts and logs row by row: 1.7 s for a day of
-- 1,000,000 runs with one attempt each (more with logs), and as many dead rows left for
-- VACUUM. An attempt's partition is the day it ended (finished_at, the database's
-- clock); a log line's, the day it was written (at). Retention drops a day of them once
-- no history day that stays can hold their runs (rota_retire_history below): a run
-- kept by retention whose earlier attempts or lines are older than the retention loses
-- those (a run that retried or logged across the cutoff), as it would with any log
-- retention by age.
--
-- The upgrade copies nothing kept: each table as it was becomes its first partition
-- (..._upto_<day after today>), attached after a validating scan and, for the new
-- primary keys (a unique index on a partitioned table must name the partition key), one
-- index build. A log line stamped after that day (a worker's clock ahead) moves first.

ALTER TABLE rota_attempts RENAME TO rota_attempts_before_v30;
ALTER TABLE rota_attempts_before_v30 DROP CONSTRAINT rota_attempts_pkey;
CREATE TABLE rota_attempts (
    run_id      bigint NOT NULL,
    fence       bigint NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text,
    started_at  timestamptz,
    finished_at timestamptz NOT NULL,
    outcome     text NOT NULL,
    error       text,
    PRIMARY KEY (run_id, fence, finished_at)
) PARTITION BY RANGE (finished_at);
-- Rows no day takes (a day not made in time): retention deletes them by age.
CREATE TABLE rota_attempts_default PARTITION OF rota_attempts DEFAULT;

-- Log ids keep counting from where the old table's identity stood: a tail asks for the
-- lines after the last id it has seen. (A partitioned table cannot have an identity
-- column before PostgreSQL 17: a sequence default does the same.)
ALTER TABLE rota_run_logs RENAME TO rota_run_logs_before_v30;
ALTER TABLE rota_run_logs_before_v30 DROP CONSTRAINT rota_run_logs_pkey;
ALTER INDEX rota_run_logs_run RENAME TO rota_run_logs_before_v30_run;
CREATE SEQUENCE rota_run_log_id_seq;
SELECT setval('rota_run_log_id_seq',
              nextval(pg_get_serial_sequence('rota_run_logs_before_v30', 'id')));
ALTER TABLE rota_run_logs_before_v30 ALTER COLUMN id DROP IDENTITY;
CREATE TABLE rota_run_logs (
    id      bigint NOT NULL DEFAULT nextval('rota_run_log_id_seq'),
    run_id  bigint NOT NULL,
    attempt integer NOT NULL,
    at      timestamptz NOT NULL,
    level   text NOT NULL,
    message text NOT NULL,
    fields  jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);
ALTER SEQUENCE rota_run_log_id_seq OWNED BY rota_run_logs.id;
-- A run's lines in order (the old table's index of the same shape becomes its partition's).
CREATE INDEX rota_run_logs_run ON rota_run_logs (run_id, id);
CREATE TABLE rota_run_logs_default PARTITION OF rota_run_logs DEFAULT;

-- The partitions of a day-partitioned table, by their names: <table>_YYYYMMDD holds that
-- UTC day, <table>_upto_YYYYMMDD everything before that day.
CREATE FUNCTION rota_day_partitions(parent regclass)
RETURNS TABLE (name text, starts timestamptz, ends timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           CASE WHEN c.relname ~ '_upto_[0-9]{8}$' THEN '-infinity'::timestamptz
                ELSE to_date(right(c.relname, 8), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC'
           END,
           (to_date(right(c.relname, 8), 'YYYYMMDD')
            + CASE WHEN c.relname ~ '_upto_[0-9]{8}$' THEN 0 ELSE 1 END)::timestamp
               AT TIME ZONE 'UTC'
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = parent AND c.relname ~ '_[0-9]{8}$'
$$;

-- The coming days, for history, attempts and logs alike (the leader calls this each
-- housekeeping round, through rota_retire_history; idempotent). A day that overlaps a
-- partition already there, or has rows in the default partition already (making its
-- partition would have to move them), is left to the partitions that hold it.
CREATE OR REPLACE FUNCTION rota_make_history_days(first_day date, days integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    day date;
    parent text;
    made integer := 0;
    name text;
BEGIN
    FOR i IN 0 .. days - 1 LOOP
        day := first_day + i;
        FOREACH parent IN ARRAY ARRAY['rota_runs_history', 'rota_attempts', 'rota_run_logs']
        LOOP
            name := parent || '_' || to_char(day, 'YYYYMMDD');
            CONTINUE WHEN to_regclass(name) IS NOT NULL;
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               name, parent, day::timestamp AT TIME ZONE 'UTC',
                               (day + 1)::timestamp AT TIME ZONE 'UTC');
                made := made + 1;
            EXCEPTION
                WHEN invalid_object_definition OR check_violation THEN NULL;
            END;
        END LOOP;
    END LOOP;
    RETURN made;
END
$$;

DO $$
DECLARE
    upto date := (now() AT TIME ZONE 'UTC')::date + 1;
    upto_at timestamptz := upto::timestamp AT TIME ZONE 'UTC';
    suffix text := '_upto_' || to_char(upto, 'YYYYMMDD');
BEGIN
    PERFORM rota_make_history_days(upto, 3);
    -- Every attempt ended by now (the database's clock); a log line's time is the
    -- worker's, and one ahead of the first partition's end goes where its day is.
    WITH moved AS (
        DELETE FROM rota_run_logs_before_v30 WHERE at >= upto_at RETURNING *)
    INSERT INTO rota_run_logs SELECT * FROM moved;
    WITH moved AS (
        DELETE FROM rota_attempts_before_v30 WHERE finished_at >= upto_at RETURNING *)
    INSERT INTO rota_attempts SELECT * FROM moved;
    EXECUTE format('ALTER TABLE rota_attempts_before_v30 RENAME TO %I', 'rota_attempts' || suffix);
    EXECUTE format('ALTER TABLE rota_attempts ATTACH PARTITION %I'
                   ' FOR VALUES FROM (MINVALUE) TO (%L)', 'rota_attempts' || suffix, upto_at);
    EXECUTE format('ALTER TABLE rota_run_logs_before_v30 RENAME TO %I', 'rota_run_logs' || suffix);
    EXECUTE format('ALTER INDEX rota_run_logs_before_v30_run RENAME TO %I',
                   'rota_run_logs' || suffix || '_run');
    EXECUTE format('ALTER TABLE rota_run_logs ATTACH PARTITION %I'
                   ' FOR VALUES FROM (MINVALUE) TO (%L)', 'rota_run_logs' || suffix, upto_at);
END
$$;

-- Retention, a whole partition at a time: a day of history that ended before
-- older_than goes with its runs' idempotency keys, unless it still holds a step of a
-- workflow run that is kept (a workflow's steps go with their workflow run). Days of
-- attempts and log lines go once they end before both older_than and the oldest day of
-- history that stays. The coming days are made first. The runs retired.
--
-- A DROP of a partition locks its parent table out, until this transaction ends: the
-- drops come last, after every read, and take the three parents at once in the order a
-- completion takes them (attempts when its statement is parsed, history when its row
-- moves), so neither waits for the other in a cycle. A lock not granted within 0.5 s
-- (a long read of history, say) gives way: nothing is retired this time, and the next
-- housekeeping round tries again. The workers' statements queue behind it meanwhile, so
-- this bounds how long they can.
CREATE OR REPLACE FUNCTION rota_retire_history(older_than timestamptz) RETURNS bigint
LANGUAGE plpgsql
SET lock_timeout = '500ms'
AS $$
DECLARE
    part record;
    runs bigint;
    kept boolean;
    retired bigint := 0;
    going text[] := '{}';
    horizon timestamptz;
BEGIN
    PERFORM rota_make_history_days((now() AT TIME ZONE 'UTC')::date, 3);
    FOR part IN SELECT * FROM rota_day_partitions('rota_runs_history') ORDER BY ends LOOP
        EXIT WHEN part.ends > older_than;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I p JOIN rota_workflow_runs w'
                       ' ON w.id = p.workflow_run_id)', part.name) INTO STRICT kept;
        CONTINUE WHEN kept;
        EXECUTE format('DELETE FROM rota_idempotency_keys WHERE run_id IN'
                       ' (SELECT id FROM %I WHERE idempotency_key IS NOT NULL)', part.name);
        EXECUTE format('SELECT count(*) FROM %I', part.name) INTO STRICT runs;
        going := going || part.name;
        retired := retired + runs;
    END LOOP;
    -- least() passes over a NULL: with no day of history left, older_than alone.
    SELECT least(older_than, min(d.starts)) INTO horizon
    FROM rota_day_partitions('rota_runs_history') AS d WHERE d.name <> ALL (going);
    SELECT going || coalesce(array_agg(d.name), '{}') INTO going
    FROM (SELECT * FROM rota_day_partitions('rota_attempts')
          UNION ALL SELECT * FROM rota_day_partitions('rota_run_logs')) AS d
    WHERE d.ends <= horizon;
    IF cardinality(going) > 0 THEN
        LOCK TABLE rota_attempts, rota_run_logs, rota_runs_history IN ACCESS EXCLUSIVE MODE;
        FOR i IN 1 .. cardinality(going) LOOP
            EXECUTE format('DROP TABLE %I', going[i]);
        END LOOP;
    END IF;
    DELETE FROM rota_attempts_default WHERE finished_at < horizon;
    DELETE FROM rota_run_logs_default WHERE at < horizon;
    RETURN retired;
EXCEPTION
    WHEN lock_not_available THEN
        RETURN 0;  -- everything above is undone with the block; the next round retries
END
$$;
