-- Reading runs: the operator's views, the API's search and the cluster counts.

-- name: get_run
SELECT * FROM rota_runs WHERE id = :id;

-- name: list_runs
SELECT * FROM rota_runs
WHERE (:state IS NULL OR state = :state)
  AND (:handler IS NULL OR handler = :handler)
  AND (:queue IS NULL OR queue = :queue)
  AND (:before_id IS NULL OR id < :before_id)
ORDER BY id DESC
LIMIT :limit;

-- name: attempts
SELECT * FROM rota_run_attempts WHERE run_id = :id ORDER BY fence;

-- name: logs
-- In the order written; a tail asks for the lines after the last it has seen.
SELECT * FROM rota_run_logs
WHERE run_id = :id AND (:after IS NULL OR id > :after)
ORDER BY id
LIMIT :limit;

-- name: search_runs
-- Newest first by id (keyset: id < before_id). Each filter is skipped when NULL; list
-- parameters are JSON arrays, :labels a JSON object whose every pair the run's labels
-- must hold. Owner, labels and priority have no index (ADR 0037).
SELECT r.* FROM (
    -- Each home read only if a state asked for can be in it (search_filter's in_live
    -- and in_history, evaluated once): through the view, a search for pending runs
    -- walked all of history for them (270 ms at 1,000,000 runs, 1 ms this way).
    SELECT * FROM rota_runs_live WHERE :in_live
    UNION ALL
    SELECT * FROM rota_runs_history WHERE :in_history) r
WHERE (:namespaces IS NULL OR r.namespace IN (SELECT value FROM json_each(:namespaces)))
  AND (:states IS NULL OR r.state IN (SELECT value FROM json_each(:states)))
  AND (:handler IS NULL OR r.handler = :handler)
  AND (:queue IS NULL OR r.queue = :queue)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(r.tags) WHERE value = :tag))
  AND (:job_id IS NULL OR r.job_id = :job_id)
  AND (:owner IS NULL OR r.owner = :owner)
  AND (:labels IS NULL OR NOT EXISTS (
         SELECT 1 FROM json_each(:labels) f
         WHERE NOT EXISTS (SELECT 1 FROM json_each(r.labels) l
                           WHERE l.key = f.key AND l.value = f.value)))
  AND (:priority IS NULL OR r.priority = :priority)
  AND (:created_after IS NULL OR r.created_at >= :created_after)
  AND (:created_before IS NULL OR r.created_at < :created_before)
  AND (:pattern IS NULL
       OR r.handler LIKE :pattern ESCAPE '\'
       OR r.error LIKE :pattern ESCAPE '\'
       OR EXISTS (SELECT 1 FROM rota_jobs j
                  WHERE j.id = r.job_id AND j.name LIKE :pattern ESCAPE '\'))
  AND (:before_id IS NULL OR r.id < :before_id)
ORDER BY r.id DESC
LIMIT :limit;

-- name: oldest_due_run_at
SELECT min(run_at) AS run_at FROM rota_runs_live
WHERE state IN ('pending', 'retrying') AND run_at <= :now;

-- name: live_queue_counts
-- Unfinished runs and dead letters per namespace, queue and state, each from its own
-- home's state index (index-only). Through the view both tables were scanned whole:
-- 200 ms at 1,000,000 runs against 26 ms.
SELECT namespace, queue, state, count(*) AS count,
       min(CASE WHEN state IN ('pending', 'retrying') AND run_at <= :now THEN run_at END)
           AS oldest_due_at
FROM rota_runs_live
WHERE state IN ('pending', 'claimed', 'running', 'retrying')
GROUP BY namespace, queue, state
UNION ALL
SELECT namespace, queue, state, count(*), NULL
FROM rota_runs_history
WHERE state = 'dead_lettered'
GROUP BY namespace, queue, state
ORDER BY namespace, queue, state;

-- name: finished_counts
-- Runs finished since :since (and before :until, if given) per epoch-aligned bucket
-- (rota_runs_finished).
SELECT CAST(finished_at / :bucket AS INTEGER) * :bucket AS bucket_start,
       namespace, queue, state, count(*) AS count
FROM rota_runs_history
WHERE finished_at IS NOT NULL AND finished_at >= :since
  AND (:until IS NULL OR finished_at < :until)
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
    SELECT CAST(minute / :bucket AS INTEGER) * :bucket AS bucket_start,
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
    WHERE minute >= :since AND minute < :until
    GROUP BY 1, namespace, queue, states.state
) AS counts
WHERE count > 0;
