-- The charts' rollup (domain/charts.py, migration 0024): the leader's batches and the
-- charts' reads. Runs are read from history only; a chart reads only the rollup.

-- name: chart_counted_until
-- Every minute before counted_until is counted (no row: nothing yet).
SELECT counted_until FROM rota_chart_rollup WHERE id = 1;

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
    minute, namespace, queue, handler, state, count, waited_sum,
    waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)
SELECT minute, namespace, queue, handler, state, count(*),
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
) AS finished
GROUP BY 1, namespace, queue, handler, state;

-- name: forget_chart_hours
DELETE FROM rota_chart_hours WHERE hour >= :hour_start OR hour < :hours_keep_since;

-- name: count_chart_hours
-- The hours the batch touched, summed again from their minutes (all still kept).
INSERT INTO rota_chart_hours (
    hour, namespace, queue, handler, state, count, waited_sum,
    waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)
SELECT CAST(minute / 3600 AS INTEGER) * 3600, namespace, queue, handler, state,
       sum(count),
       sum(waited_sum),
       sum(waited_100ms),
       sum(waited_1s),
       sum(waited_10s),
       sum(waited_1m),
       sum(waited_10m),
       sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= :hour_start AND minute < :hour_until
GROUP BY 1, namespace, queue, handler, state;

-- name: forget_chart_quarters
DELETE FROM rota_chart_quarters
WHERE quarter >= :hour_start OR quarter < :minutes_keep_since;

-- name: count_chart_quarters
-- The quarter-hours of those hours, likewise (kept as long as minutes).
INSERT INTO rota_chart_quarters (
    quarter, namespace, queue, handler, state, count, waited_sum,
    waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)
SELECT CAST(minute / 900 AS INTEGER) * 900, namespace, queue, handler, state,
       sum(count),
       sum(waited_sum),
       sum(waited_100ms),
       sum(waited_1s),
       sum(waited_10s),
       sum(waited_1m),
       sum(waited_10m),
       sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= :hour_start AND minute < :hour_until
GROUP BY 1, namespace, queue, handler, state;

-- name: set_chart_counted_until
INSERT INTO rota_chart_rollup (id, counted_until) VALUES (1, :until)
ON CONFLICT (id) DO UPDATE SET counted_until = excluded.counted_until;

-- name: chart_minutes
-- A chart's bars from the minutes in [:since, :until), per namespace and queue (or
-- handler, :by). The failure states are domain.charts.FAILURE_STATES (a test pins them).
SELECT CAST(minute / :bucket AS INTEGER) * :bucket AS bucket_start,
       namespace, CASE WHEN :by = 'handler' THEN handler ELSE queue END AS key,
       sum(count) AS count,
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END) AS succeeded,
       sum(CASE WHEN state IN ('failed', 'timed_out', 'dead_lettered', 'cancelled')
                THEN count ELSE 0 END) AS failures,
       sum(waited_sum) AS waited_sum,
       sum(waited_100ms) AS waited_100ms,
       sum(waited_1s) AS waited_1s,
       sum(waited_10s) AS waited_10s,
       sum(waited_1m) AS waited_1m,
       sum(waited_10m) AS waited_10m,
       sum(waited_more) AS waited_more
FROM rota_chart_minutes
WHERE minute >= :since AND minute < :until
GROUP BY 1, namespace, 3;

-- name: chart_hours
-- The same from the hours (the 7 d chart).
SELECT CAST(hour / :bucket AS INTEGER) * :bucket AS bucket_start,
       namespace, CASE WHEN :by = 'handler' THEN handler ELSE queue END AS key,
       sum(count) AS count,
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END) AS succeeded,
       sum(CASE WHEN state IN ('failed', 'timed_out', 'dead_lettered', 'cancelled')
                THEN count ELSE 0 END) AS failures,
       sum(waited_sum) AS waited_sum,
       sum(waited_100ms) AS waited_100ms,
       sum(waited_1s) AS waited_1s,
       sum(waited_10s) AS waited_10s,
       sum(waited_1m) AS waited_1m,
       sum(waited_10m) AS waited_10m,
       sum(waited_more) AS waited_more
FROM rota_chart_hours
WHERE hour >= :since AND hour < :until
GROUP BY 1, namespace, 3;

-- name: chart_quarters
-- The same from the quarter-hours (the 24 h chart).
SELECT CAST(quarter / :bucket AS INTEGER) * :bucket AS bucket_start,
       namespace, CASE WHEN :by = 'handler' THEN handler ELSE queue END AS key,
       sum(count) AS count,
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END) AS succeeded,
       sum(CASE WHEN state IN ('failed', 'timed_out', 'dead_lettered', 'cancelled')
                THEN count ELSE 0 END) AS failures,
       sum(waited_sum) AS waited_sum,
       sum(waited_100ms) AS waited_100ms,
       sum(waited_1s) AS waited_1s,
       sum(waited_10s) AS waited_10s,
       sum(waited_1m) AS waited_1m,
       sum(waited_10m) AS waited_10m,
       sum(waited_more) AS waited_more
FROM rota_chart_quarters
WHERE quarter >= :since AND quarter < :until
GROUP BY 1, namespace, 3;
