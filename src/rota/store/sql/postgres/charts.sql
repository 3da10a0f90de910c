-- The charts' rollup (domain/charts.py, migrations 0025 and 0028): the leader's batches
-- and the charts' reads. Runs are read from history only; a chart reads only the
-- rollup, one row per bucket, namespace, queue and handler with a count per state.

-- name: chart_counted_until
-- Every minute from counted_from to counted_until is counted (no row: nothing yet;
-- counted_from NULL: not known, on a database counted before schema version 33).
SELECT counted_from, counted_until FROM rota_chart_rollup WHERE id = 1;

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
-- Pickup delay is started_at - run_at (a run that never started has none). Every
-- expression per run is integer or float8 work: the minute by date_bin (PostgreSQL 14
-- or newer), the delay's buckets as interval comparisons, its sum by date_part. The
-- same count with extract() (numeric) cost 2.05 s for a minute of 1.3M runs where this
-- costs 0.83 s (docs/benchmarks-by-hand.md, "one read of each finished run").
INSERT INTO rota_chart_minutes (
    minute, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT date_bin('1 minute', finished_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
       namespace, queue, handler, count(*),
       count(*) FILTER (WHERE state = 'succeeded'),
       count(*) FILTER (WHERE state = 'failed'),
       count(*) FILTER (WHERE state = 'timed_out'),
       count(*) FILTER (WHERE state = 'dead_lettered'),
       count(*) FILTER (WHERE state = 'cancelled'),
       coalesce(sum(greatest(date_part('epoch', started_at - run_at), 0)), 0),
       count(*) FILTER (WHERE started_at - run_at <= interval '0.1 s'),
       count(*) FILTER (WHERE started_at - run_at > interval '0.1 s'
                          AND started_at - run_at <= interval '1 s'),
       count(*) FILTER (WHERE started_at - run_at > interval '1 s'
                          AND started_at - run_at <= interval '10 s'),
       count(*) FILTER (WHERE started_at - run_at > interval '10 s'
                          AND started_at - run_at <= interval '60 s'),
       count(*) FILTER (WHERE started_at - run_at > interval '60 s'
                          AND started_at - run_at <= interval '600 s'),
       count(*) FILTER (WHERE started_at - run_at > interval '600 s')
FROM rota_runs_history
WHERE finished_at >= %(start)s::timestamptz AND finished_at < %(until)s::timestamptz
GROUP BY 1, namespace, queue, handler;

-- name: forget_chart_hours
DELETE FROM rota_chart_hours
WHERE hour >= %(hour_start)s::timestamptz OR hour < %(hours_keep_since)s::timestamptz;

-- name: count_chart_hours
-- The hours the batch touched, summed again from their minutes (all still kept).
INSERT INTO rota_chart_hours (
    hour, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT date_trunc('hour', minute), namespace, queue, handler,
       sum(finished), sum(succeeded), sum(failed), sum(timed_out), sum(dead_lettered),
       sum(cancelled), sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s),
       sum(waited_1m), sum(waited_10m), sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= %(hour_start)s::timestamptz AND minute < %(hour_until)s::timestamptz
GROUP BY 1, namespace, queue, handler;

-- name: forget_chart_quarters
DELETE FROM rota_chart_quarters
WHERE quarter >= %(hour_start)s::timestamptz
   OR quarter < %(minutes_keep_since)s::timestamptz;

-- name: count_chart_quarters
-- The quarter-hours of those hours, likewise (kept as long as minutes).
INSERT INTO rota_chart_quarters (
    quarter, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT to_timestamp(floor(extract(epoch FROM minute) / 900) * 900),
       namespace, queue, handler,
       sum(finished), sum(succeeded), sum(failed), sum(timed_out), sum(dead_lettered),
       sum(cancelled), sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s),
       sum(waited_1m), sum(waited_10m), sum(waited_more)
FROM rota_chart_minutes
WHERE minute >= %(hour_start)s::timestamptz AND minute < %(hour_until)s::timestamptz
GROUP BY 1, namespace, queue, handler;

-- name: set_chart_counted_until
INSERT INTO rota_chart_rollup (id, counted_from, counted_until)
VALUES (1, %(counted_from)s::timestamptz, %(until)s::timestamptz)
ON CONFLICT (id) DO UPDATE
SET counted_from = excluded.counted_from, counted_until = excluded.counted_until;

-- name: chart_read
-- A chart's read, one query for every range: rollup names the level whose rows are
-- its bars ('minutes', 'quarters' or 'hours': the other two branches are constant-false
-- and never scanned). First the keys (namespace and queue, or handler as by says) of
-- the namespaces the caller reaches (namespaces, NULL: all), ranked by runs finished
-- (rows with bar NULL); then per bar of bucket seconds from since the sums of the top
-- top keys apart (series = their rank) and of every other key together (series 0), of
-- one key only with only_namespace and only_key. The page draws series 0 alone;
-- summing in the database returns at most (top + 1) x bars rows, whatever the keys.
-- The failure states are domain.charts.FAILURE_STATES (a test pins them); a row
-- carries every state's count (migration 0028), so a bar of a key sums one row.
WITH rollup (at, namespace, key, finished, succeeded, failures, waited_sum,
             waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more) AS (
    SELECT minute, namespace, CASE WHEN %(by)s::text = 'handler' THEN handler ELSE queue END,
           finished, succeeded, failed + timed_out + dead_lettered + cancelled, waited_sum,
           waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more
    FROM rota_chart_minutes
    WHERE %(rollup)s::text = 'minutes'
      AND minute >= %(since)s::timestamptz AND minute < %(until)s::timestamptz
    UNION ALL
    SELECT quarter, namespace, CASE WHEN %(by)s::text = 'handler' THEN handler ELSE queue END,
           finished, succeeded, failed + timed_out + dead_lettered + cancelled, waited_sum,
           waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more
    FROM rota_chart_quarters
    WHERE %(rollup)s::text = 'quarters'
      AND quarter >= %(since)s::timestamptz AND quarter < %(until)s::timestamptz
    UNION ALL
    SELECT hour, namespace, CASE WHEN %(by)s::text = 'handler' THEN handler ELSE queue END,
           finished, succeeded, failed + timed_out + dead_lettered + cancelled, waited_sum,
           waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more
    FROM rota_chart_hours
    WHERE %(rollup)s::text = 'hours'
      AND hour >= %(since)s::timestamptz AND hour < %(until)s::timestamptz
),
seen AS NOT MATERIALIZED (
    SELECT * FROM rollup
    WHERE %(namespaces)b::text[] IS NULL OR namespace = ANY(%(namespaces)b::text[])
),
ranked AS MATERIALIZED (
    SELECT namespace, key, sum(finished)::bigint AS finished,
           sum(failures)::bigint AS failures,
           row_number() OVER (ORDER BY sum(finished) DESC, namespace, key) AS rank
    FROM seen
    GROUP BY namespace, key
)
SELECT NULL::int AS bar, rank::int AS series, namespace, key, finished,
       NULL::bigint AS succeeded, failures, NULL::float8 AS waited_sum,
       NULL::bigint AS waited_100ms, NULL::bigint AS waited_1s, NULL::bigint AS waited_10s,
       NULL::bigint AS waited_1m, NULL::bigint AS waited_10m, NULL::bigint AS waited_more
FROM ranked
UNION ALL
-- Grouped by the row's instant, not its bar: one level's row is one bar.
SELECT (extract(epoch FROM at - %(since)s::timestamptz) / %(bucket)s)::int,
       (CASE WHEN rank <= %(top)s THEN rank ELSE 0 END)::int, NULL, NULL,
       sum(seen.finished)::bigint, sum(succeeded)::bigint, sum(seen.failures)::bigint,
       sum(waited_sum), sum(waited_100ms)::bigint, sum(waited_1s)::bigint,
       sum(waited_10s)::bigint, sum(waited_1m)::bigint, sum(waited_10m)::bigint,
       sum(waited_more)::bigint
FROM seen JOIN ranked USING (namespace, key)
WHERE %(only_namespace)s::text IS NULL
   OR (namespace = %(only_namespace)s::text AND key = %(only_key)s::text)
GROUP BY at, 2;
