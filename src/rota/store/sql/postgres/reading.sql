-- Reading runs: the operator's views, the API's search and the cluster counts.

-- name: get_run
SELECT * FROM rota_runs WHERE id = %(id)s;

-- name: list_runs
SELECT * FROM rota_runs
WHERE (%(state)s::text IS NULL OR state = %(state)s)
  AND (%(handler)s::text IS NULL OR handler = %(handler)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: attempts
-- Every attempt, a success kept in its run's own row too (rota_run_attempts, migration 31).
SELECT * FROM rota_run_attempts WHERE run_id = %(id)s ORDER BY fence;

-- name: logs
-- In the order written; a tail asks for the lines after the last it has seen.
SELECT * FROM rota_run_logs
WHERE run_id = %(id)s AND (%(after)s::bigint IS NULL OR id > %(after)s)
ORDER BY id
LIMIT %(limit)s;

-- name: search_runs
-- Newest first by id (keyset: id < before_id). Each filter is skipped when NULL. Owner,
-- labels (every given key/value pair in the run's, jsonb containment) and priority have
-- no index: they are tested on the rows the id order reads (ADR 0037). The text is
-- matched as lower(x) LIKE lower(pattern), and job names through one hashed set of the
-- matching jobs' ids: an ILIKE and a correlated look at rota_jobs per row made a search
-- that walks 200,000 queued runs take 125 ms; this, 62 ms.
SELECT r.* FROM rota_runs r
WHERE (%(namespaces)b::text[] IS NULL OR r.namespace = ANY(%(namespaces)b::text[]))
  AND (%(states)b::text[] IS NULL OR r.state = ANY(%(states)b::text[]))
  AND (%(handler)s::text IS NULL OR r.handler = %(handler)s)
  AND (%(queue)s::text IS NULL OR r.queue = %(queue)s)
  AND (%(tag)s::text IS NULL OR r.tags @> ARRAY[%(tag)s::text])
  AND (%(job_id)s::bigint IS NULL OR r.job_id = %(job_id)s)
  AND (%(owner)s::text IS NULL OR r.owner = %(owner)s)
  AND (%(labels)s::jsonb IS NULL OR r.labels @> %(labels)s::jsonb)
  AND (%(priority)s::smallint IS NULL OR r.priority = %(priority)s)
  AND (%(created_after)s::timestamptz IS NULL OR r.created_at >= %(created_after)s)
  AND (%(created_before)s::timestamptz IS NULL OR r.created_at < %(created_before)s)
  AND (%(pattern)s::text IS NULL
       OR lower(r.handler) LIKE lower(%(pattern)s) ESCAPE '\'
       OR lower(r.error) LIKE lower(%(pattern)s) ESCAPE '\'
       OR r.job_id IN (SELECT j.id FROM rota_jobs j
                       WHERE lower(j.name) LIKE lower(%(pattern)s) ESCAPE '\'))
  AND (%(before_id)s::bigint IS NULL OR r.id < %(before_id)s)
ORDER BY r.id DESC
LIMIT %(limit)s;

-- name: oldest_due_run_at
SELECT min(run_at) AS run_at FROM rota_runs
WHERE state IN ('pending', 'retrying') AND run_at <= COALESCE(%(now)s::timestamptz, now());

-- name: live_queue_counts
-- Unfinished runs and dead letters per namespace, queue and state: the waiting ones and
-- the dead letters from rota_runs_state_id (index-only), the held ones from
-- rota_runs_leased (the state index leaves them out, migration 19; they are few).
SELECT namespace, queue, state, count(*) AS count,
       min(run_at) FILTER (WHERE state IN ('pending', 'retrying')
                            AND run_at <= COALESCE(%(now)s::timestamptz, now())) AS oldest_due_at
FROM rota_runs
WHERE state IN ('pending', 'retrying', 'dead_lettered')
GROUP BY namespace, queue, state
UNION ALL
SELECT namespace, queue, state, count(*), NULL
FROM rota_runs
WHERE state IN ('claimed', 'running')
GROUP BY namespace, queue, state
ORDER BY namespace, queue, state;

-- name: finished_counts
-- Runs finished since %(since)s (and before %(until)s, if given) per epoch-aligned
-- bucket (rota_runs_finished).
SELECT to_timestamp(floor(extract(epoch FROM finished_at) / %(bucket)s) * %(bucket)s)
           AS bucket_start,
       namespace, queue, state, count(*) AS count
FROM rota_runs
WHERE finished_at IS NOT NULL AND finished_at >= %(since)s::timestamptz
  AND (%(until)s::timestamptz IS NULL OR finished_at < %(until)s)
GROUP BY 1, namespace, queue, state
ORDER BY 1, namespace, queue, state;

-- name: finished_minutes
-- The charts' per-minute counts (charts.sql) from since to until, summed over handlers
-- into epoch-aligned buckets, a row per final state: a row of the rollup carries a
-- count per state, and skipped is what the others leave of finished
-- (tests/contract/test_store_stats.py finishes a run in every final state).
WITH states (state) AS (
    VALUES ('succeeded'), ('failed'), ('timed_out'), ('dead_lettered'), ('cancelled'),
           ('skipped')
)
SELECT bucket_start, namespace, queue, state, count
FROM (
    SELECT to_timestamp(floor(extract(epoch FROM minute) / %(bucket)s) * %(bucket)s)
               AS bucket_start,
           namespace, queue, states.state,
           sum(CASE states.state
                   WHEN 'succeeded' THEN succeeded
                   WHEN 'failed' THEN failed
                   WHEN 'timed_out' THEN timed_out
                   WHEN 'dead_lettered' THEN dead_lettered
                   WHEN 'cancelled' THEN cancelled
                   ELSE finished - succeeded - failed - timed_out - dead_lettered - cancelled
               END) AS count
    FROM rota_chart_minutes CROSS JOIN states
    WHERE minute >= %(since)s::timestamptz AND minute < %(until)s::timestamptz
    GROUP BY 1, namespace, queue, states.state
) AS counts
WHERE count > 0;
