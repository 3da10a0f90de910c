-- The charts' rollup (domain/charts.py, migration 0024): the leader's batches and the
-- charts' reads. Runs are read from history only; a chart reads only the rollup.

-- name: chart_counted_until
-- Every minute before counted_until is counted (no row: nothing yet).
SELECT counted_until FROM rota_chart_rollup WHERE id = 1;

-- name: lock_chart_rollup
-- Two leaders overlapping at a handover never count at once (both would insert the
-- same minutes, and one would fail on the primary key): the second skips its turn
-- rather than wait, since the first may be a stopped process holding the lock, and a
-- waiting duty would hold a pool connection the new leader's reaper needs.
SELECT pg_try_advisory_xact_lock(7307916211) AS locked;

-- name: forget_chart_minutes
-- Before a batch recounts the minutes from start (idempotent: a batch run twice
-- writes the same rows); minutes older than minutes_keep_since are dropped.
DELETE FROM rota_chart_minutes
WHERE minute >= %(start)s::timestamptz OR minute < %(minutes_keep_since)s::timestamptz;

-- name: count_chart_minutes
-- Pickup delay is started_at - run_at (a run that never started has none).
INSERT INTO rota_chart_minutes (
    minute, namespace, queue, handler, state, count, waited_sum,
    waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)
SELECT minute, namespace, queue, handler, state, count(*),
       coalesce(sum(greatest(waited, 0)), 0),
       sum(CASE WHEN waited <= 0.1 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 0.1 AND waited <= 1 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 1 AND waited <= 10 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 10 AND waited <= 60 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 60 AND waited <= 600 THEN 1 ELSE 0 END),
       sum(CASE WHEN waited > 600 THEN 1 ELSE 0 END)
FROM (
    SELECT to_timestamp(floor(extract(epoch FROM finished_at) / 60) * 60) AS minute,
           namespace, queue, handler, state, extract(epoch FROM started_at - run_at) AS waited
    FROM rota_runs_history
    WHERE finished_at >= %(start)s::timestamptz AND finished_at < %(until)s::timestamptz
) AS finished
GROUP BY 1, namespace, queue, handler, state;

-- name: forget_chart_hours
DELETE FROM rota_chart_hours
WHERE hour >= %(hour_start)s::timestamptz OR hour < %(hours_keep_since)s::timestamptz;

-- name: count_chart_hours
-- The hours the batch touched, summed again from their minutes (all still kept).
INSERT INTO rota_chart_hours (
    hour, namespace, queue, handler, state, count, waited_sum,
    waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)
SELECT date_trunc('hour', minute), namespace, queue, handler, state,
       sum(count),
       sum(waited_sum),
       sum(waited_100ms),
       sum(waited_1s),
       sum(waited_10s),
       sum(waited_1m),
       sum(waited_10m),
       sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= %(hour_start)s::timestamptz AND minute < %(hour_until)s::timestamptz
GROUP BY 1, namespace, queue, handler, state;

-- name: forget_chart_quarters
DELETE FROM rota_chart_quarters
WHERE quarter >= %(hour_start)s::timestamptz
   OR quarter < %(minutes_keep_since)s::timestamptz;

-- name: count_chart_quarters
-- The quarter-hours of those hours, likewise (kept as long as minutes).
INSERT INTO rota_chart_quarters (
    quarter, namespace, queue, handler, state, count, waited_sum,
    waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)
SELECT to_timestamp(floor(extract(epoch FROM minute) / 900) * 900),
       namespace, queue, handler, state,
       sum(count),
       sum(waited_sum),
       sum(waited_100ms),
       sum(waited_1s),
       sum(waited_10s),
       sum(waited_1m),
       sum(waited_10m),
       sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= %(hour_start)s::timestamptz AND minute < %(hour_until)s::timestamptz
GROUP BY 1, namespace, queue, handler, state;

-- name: set_chart_counted_until
INSERT INTO rota_chart_rollup (id, counted_until) VALUES (1, %(until)s::timestamptz)
ON CONFLICT (id) DO UPDATE SET counted_until = excluded.counted_until;

-- name: chart_minutes
-- A chart's bars from the minutes in [since, until), per namespace and queue (or
-- handler, by). The failure states are domain.charts.FAILURE_STATES (a test pins them).
SELECT to_timestamp(floor(extract(epoch FROM minute) / %(bucket)s) * %(bucket)s)
           AS bucket_start,
       namespace, CASE WHEN %(by)s::text = 'handler' THEN handler ELSE queue END AS key,
       sum(count)::bigint AS count,
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END)::bigint AS succeeded,
       sum(CASE WHEN state IN ('failed', 'timed_out', 'dead_lettered', 'cancelled')
                THEN count ELSE 0 END)::bigint AS failures,
       sum(waited_sum) AS waited_sum,
       sum(waited_100ms)::bigint AS waited_100ms,
       sum(waited_1s)::bigint AS waited_1s,
       sum(waited_10s)::bigint AS waited_10s,
       sum(waited_1m)::bigint AS waited_1m,
       sum(waited_10m)::bigint AS waited_10m,
       sum(waited_more)::bigint AS waited_more
FROM rota_chart_minutes
WHERE minute >= %(since)s::timestamptz AND minute < %(until)s::timestamptz
GROUP BY 1, namespace, 3;

-- name: chart_hours
-- The same from the hours (the 7 d chart).
SELECT to_timestamp(floor(extract(epoch FROM hour) / %(bucket)s) * %(bucket)s)
           AS bucket_start,
       namespace, CASE WHEN %(by)s::text = 'handler' THEN handler ELSE queue END AS key,
       sum(count)::bigint AS count,
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END)::bigint AS succeeded,
       sum(CASE WHEN state IN ('failed', 'timed_out', 'dead_lettered', 'cancelled')
                THEN count ELSE 0 END)::bigint AS failures,
       sum(waited_sum) AS waited_sum,
       sum(waited_100ms)::bigint AS waited_100ms,
       sum(waited_1s)::bigint AS waited_1s,
       sum(waited_10s)::bigint AS waited_10s,
       sum(waited_1m)::bigint AS waited_1m,
       sum(waited_10m)::bigint AS waited_10m,
       sum(waited_more)::bigint AS waited_more
FROM rota_chart_hours
WHERE hour >= %(since)s::timestamptz AND hour < %(until)s::timestamptz
GROUP BY 1, namespace, 3;

-- name: chart_quarters
-- The same from the quarter-hours (the 24 h chart).
SELECT to_timestamp(floor(extract(epoch FROM quarter) / %(bucket)s) * %(bucket)s)
           AS bucket_start,
       namespace, CASE WHEN %(by)s::text = 'handler' THEN handler ELSE queue END AS key,
       sum(count)::bigint AS count,
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END)::bigint AS succeeded,
       sum(CASE WHEN state IN ('failed', 'timed_out', 'dead_lettered', 'cancelled')
                THEN count ELSE 0 END)::bigint AS failures,
       sum(waited_sum) AS waited_sum,
       sum(waited_100ms)::bigint AS waited_100ms,
       sum(waited_1s)::bigint AS waited_1s,
       sum(waited_10s)::bigint AS waited_10s,
       sum(waited_1m)::bigint AS waited_1m,
       sum(waited_10m)::bigint AS waited_10m,
       sum(waited_more)::bigint AS waited_more
FROM rota_chart_quarters
WHERE quarter >= %(since)s::timestamptz AND quarter < %(until)s::timestamptz
GROUP BY 1, namespace, 3;
