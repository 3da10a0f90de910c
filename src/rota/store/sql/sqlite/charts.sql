-- The charts' rollup (domain/charts.py, migrations 0025 and 0028): the leader's batches
-- and the charts' reads. Runs are read from history only; a chart reads only the
-- rollup, one row per bucket, namespace, queue and handler with a count per state.

-- name: chart_counted_until
-- Every minute from counted_from to counted_until is counted (no row: nothing yet;
-- counted_from NULL: not known, on a database counted before schema version 33).
SELECT counted_from, counted_until FROM rota_chart_rollup WHERE id = 1;

-- name: lock_chart_rollup
-- BEGIN IMMEDIATE already holds SQLite's one writer lock: batches are serialised by
-- the transaction itself.
SELECT 1 AS locked;

-- name: forget_chart_minutes
-- Before a batch recounts the minutes from :start (idempotent: a batch run twice
-- writes the same rows); minutes older than :minutes_keep_since are dropped.
DELETE FROM rota_chart_minutes WHERE minute >= :start OR minute < :minutes_keep_since;

-- name: count_chart_minutes
-- Pickup delay is started_at - run_at (a run that never started has none).
INSERT INTO rota_chart_minutes (
    minute, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT minute, namespace, queue, handler, count(*),
       sum(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END),
       sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END),
       sum(CASE WHEN state = 'timed_out' THEN 1 ELSE 0 END),
       sum(CASE WHEN state = 'dead_lettered' THEN 1 ELSE 0 END),
       sum(CASE WHEN state = 'cancelled' THEN 1 ELSE 0 END),
       coalesce(sum(max(waited, 0)), 0),
       sum(CASE WHEN waited <= 0.1 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 0.1 AND waited <= 1 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 1 AND waited <= 10 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 10 AND waited <= 60 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 60 AND waited <= 600 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 600 THEN 1 ELSE 0 END)
FROM (
    SELECT CAST(finished_at / 60 AS INTEGER) * 60 AS minute,
           namespace, queue, handler, state, started_at - run_at AS waited
    FROM rota_runs_history
    WHERE finished_at >= :start AND finished_at < :until
) AS runs
GROUP BY 1, namespace, queue, handler;

-- name: forget_chart_hours
DELETE FROM rota_chart_hours WHERE hour >= :hour_start OR hour < :hours_keep_since;

-- name: count_chart_hours
-- The hours the batch touched, summed again from their minutes (all still kept).
INSERT INTO rota_chart_hours (
    hour, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT CAST(minute / 3600 AS INTEGER) * 3600, namespace, queue, handler,
       sum(finished), sum(succeeded), sum(failed), sum(timed_out), sum(dead_lettered),
       sum(cancelled), sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s),
       sum(waited_1m), sum(waited_10m), sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= :hour_start AND minute < :hour_until
GROUP BY 1, namespace, queue, handler;

-- name: forget_chart_quarters
DELETE FROM rota_chart_quarters
WHERE quarter >= :hour_start OR quarter < :minutes_keep_since;

-- name: count_chart_quarters
-- The quarter-hours of those hours, likewise (kept as long as minutes).
INSERT INTO rota_chart_quarters (
    quarter, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT CAST(minute / 900 AS INTEGER) * 900, namespace, queue, handler,
       sum(finished), sum(succeeded), sum(failed), sum(timed_out), sum(dead_lettered),
       sum(cancelled), sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s),
       sum(waited_1m), sum(waited_10m), sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= :hour_start AND minute < :hour_until
GROUP BY 1, namespace, queue, handler;

-- name: set_chart_counted_until
INSERT INTO rota_chart_rollup (id, counted_from, counted_until)
VALUES (1, :counted_from, :until)
ON CONFLICT (id) DO UPDATE
SET counted_from = excluded.counted_from, counted_until = excluded.counted_until;

-- name: chart_read
-- A chart's read, one query for every range: :rollup names the level whose rows are
-- its bars ('minutes', 'quarters' or 'hours': the other two branches are constant-false
-- and never scanned). First the keys (namespace and queue, or handler as :by says) of
-- the namespaces the caller reaches (:namespaces, NULL: all), ranked by runs finished
-- (rows with bar NULL); then per bar of :bucket seconds from :since the sums of the top
-- :top keys apart (series = their rank) and of every other key together (series 0),
-- of one key only with :only_namespace and :only_key. The page draws series 0 alone;
-- summing in the database returns at most (:top + 1) x bars rows, whatever the keys.
-- The failure states are domain.charts.FAILURE_STATES (a test pins them); a row
-- carries every state's count (migration 0028), so a bar of a key sums one row.
WITH rollup (at, namespace, key, finished, succeeded, failures, waited_sum,
             waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more) AS (
    SELECT minute, namespace, CASE WHEN :by = 'handler' THEN handler ELSE queue END,
           finished, succeeded, failed + timed_out + dead_lettered + cancelled, waited_sum,
           waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more
    FROM rota_chart_minutes
    WHERE :rollup = 'minutes' AND minute >= :since AND minute < :until
    UNION ALL
    SELECT quarter, namespace, CASE WHEN :by = 'handler' THEN handler ELSE queue END,
           finished, succeeded, failed + timed_out + dead_lettered + cancelled, waited_sum,
           waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more
    FROM rota_chart_quarters
    WHERE :rollup = 'quarters' AND quarter >= :since AND quarter < :until
    UNION ALL
    SELECT hour, namespace, CASE WHEN :by = 'handler' THEN handler ELSE queue END,
           finished, succeeded, failed + timed_out + dead_lettered + cancelled, waited_sum,
           waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more
    FROM rota_chart_hours
    WHERE :rollup = 'hours' AND hour >= :since AND hour < :until
),
seen AS NOT MATERIALIZED (
    SELECT * FROM rollup
    WHERE :namespaces IS NULL OR namespace IN (SELECT value FROM json_each(:namespaces))
),
ranked AS MATERIALIZED (
    SELECT namespace, key, sum(finished) AS finished, sum(failures) AS failures,
           row_number() OVER (ORDER BY sum(finished) DESC, namespace, key) AS rank
    FROM seen
    GROUP BY namespace, key
)
SELECT NULL AS bar, rank AS series, namespace, key, finished, NULL AS succeeded, failures,
       NULL AS waited_sum, NULL AS waited_100ms, NULL AS waited_1s, NULL AS waited_10s,
       NULL AS waited_1m, NULL AS waited_10m, NULL AS waited_more
FROM ranked
UNION ALL
-- Grouped by the row's instant, not its bar: one level's row is one bar.
SELECT CAST((at - :since) / :bucket AS INTEGER), CASE WHEN rank <= :top THEN rank ELSE 0 END,
       NULL, NULL,
       sum(seen.finished), sum(succeeded), sum(seen.failures),
       sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s), sum(waited_1m),
       sum(waited_10m), sum(waited_more)
FROM seen JOIN ranked USING (namespace, key)
WHERE :only_namespace IS NULL OR (namespace = :only_namespace AND key = :only_key)
GROUP BY at, 2;
