-- Runs: creating, steering and pruning them. Named queries for PostgreSQL; `now` is
-- NULL in production, so the database clock decides; tests pass a fixed instant.
-- Parameters use psycopg's %(name)s style. A batched query takes each item's
-- parameter as an array of the same name (see store/dialect.py).

-- name: db_now
SELECT COALESCE(%(now)s::timestamptz, now()) AS now;

-- name: insert_runs
-- Rows come as parallel arrays. An idempotency key names one run in either home for as
-- long as it is kept: the key's row is written first (rota_idempotency_keys, migration
-- 20), and a run whose key is taken is not written. Ids are drawn in input order.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
r AS MATERIALIZED (
    SELECT nextval('rota_run_id_seq') AS id, r.*
    FROM unnest(%(namespace)b::text[], %(handler)b::text[], %(queue)b::text[],
                %(payload)b::text[], %(priority)b::smallint[], %(run_at)b::timestamptz[],
                %(max_attempts)b::integer[], %(timeout_seconds)b::double precision[],
                %(idempotency_key)b::text[], %(replay_of)b::bigint[], %(job_id)b::bigint[],
                %(slot_at)b::timestamptz[], %(tags)b::text[], %(concurrency_key)b::text[],
                %(concurrency_limit)b::integer[], %(deadline)b::timestamptz[],
                %(correlation_id)b::text[], %(trace_context)b::text[], %(rate_key)b::text[],
                %(breaker_key)b::text[], %(owner)b::text[], %(labels)b::text[])
         AS r(namespace, handler, queue, payload, priority, run_at, max_attempts,
              timeout_seconds, idempotency_key, replay_of, job_id, slot_at, tags,
              concurrency_key, concurrency_limit, deadline, correlation_id, trace_context,
              rate_key, breaker_key, owner, labels)
),
keyed AS (
    INSERT INTO rota_idempotency_keys (namespace, handler, idempotency_key, run_id)
    SELECT namespace, handler, idempotency_key, id FROM r WHERE idempotency_key IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING run_id
)
INSERT INTO rota_runs (id, namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, idempotency_key, replay_of, job_id,
                       slot_at, tags, concurrency_key, concurrency_limit, deadline,
                       correlation_id, trace_context, rate_key, breaker_key,
                       owner, labels, created_at)
SELECT r.id, r.namespace, r.handler, r.queue, r.payload::jsonb, r.priority,
       COALESCE(r.run_at, t.now),
       COALESCE(r.run_at, t.now) - make_interval(secs => r.priority * %(aging_seconds)s),
       r.max_attempts, r.timeout_seconds, r.idempotency_key, r.replay_of, r.job_id, r.slot_at,
       NULLIF(r.tags::text[], '{}'), r.concurrency_key, r.concurrency_limit, r.deadline,
       r.correlation_id, r.trace_context, r.rate_key, r.breaker_key, r.owner,
       r.labels::jsonb, t.now
FROM r, t
WHERE r.idempotency_key IS NULL OR r.id IN (SELECT run_id FROM keyed)
ORDER BY r.id
RETURNING id, namespace, handler, idempotency_key;

-- name: existing_by_idempotency_key
SELECT run_id AS id, namespace, handler, idempotency_key FROM rota_idempotency_keys
WHERE idempotency_key = ANY(%(keys)b::text[]);

-- name: append_logs
-- Only under the attempt's fence: a worker that lost its lease stores nothing. The
-- lines keep their order (ids are given in the SELECT's order).
INSERT INTO rota_run_logs (run_id, attempt, at, level, message, fields)
SELECT l.run_id, l.attempt, l.at, l.level, l.message, l.fields
FROM unnest(%(run_id)b::bigint[], %(fence)b::bigint[], %(attempt)b::integer[],
            %(at)b::timestamptz[], %(level)b::text[], %(message)b::text[],
            %(fields)b::jsonb[])
     WITH ORDINALITY AS l(run_id, fence, attempt, at, level, message, fields, n)
WHERE EXISTS (SELECT 1 FROM rota_runs r WHERE r.id = l.run_id AND r.fence = l.fence)
ORDER BY l.n
RETURNING id;

-- name: cancel_waiting
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
cancelled AS (
    UPDATE rota_runs r
    SET state = 'cancelled', finished_at = t.now, error = %(error)s
    FROM t
    WHERE r.id = %(id)s AND r.state IN ('pending', 'retrying')
    RETURNING r.id, r.namespace, r.handler, r.queue, r.attempt
),
events AS (
    -- run.cancelled enters the webhook outbox in this same statement (ADR 0017).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.cancelled', d.id, d.namespace, d.handler, d.queue, 'cancelled', d.attempt,
           t.now, t.now
    FROM t, cancelled d
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = d.namespace AND s.event_types LIKE '%%,run.cancelled,%%'
     AND (s.handler IS NULL OR s.handler = d.handler) AND (s.queue IS NULL OR s.queue = d.queue)
)
SELECT id FROM cancelled;

-- name: request_cancel_active
UPDATE rota_runs SET cancel_requested = true
WHERE id = %(id)s AND state IN ('claimed', 'running')
RETURNING id;

-- name: retire_history
-- Whole days of history go at once (rota_retire_history, migration 20): no row by row
-- delete, no dead rows for VACUUM.
SELECT rota_retire_history(%(older_than)s::timestamptz) AS runs;

-- name: prune_finished
-- What retire_history does not drop whole: finished runs that no day partition took
-- (the default partition: runs kept from before migration 20, a day made late).
WITH doomed AS (
    SELECT id FROM rota_runs_history_default
    -- A workflow's steps go with their workflow run (prune_workflow_runs).
    WHERE finished_at IS NOT NULL AND finished_at < %(older_than)s
      AND workflow_run_id IS NULL
    ORDER BY finished_at
    LIMIT %(limit)s
),
gone_attempts AS (DELETE FROM rota_attempts WHERE run_id IN (SELECT id FROM doomed)),
gone_logs AS (DELETE FROM rota_run_logs WHERE run_id IN (SELECT id FROM doomed)),
gone_keys AS (DELETE FROM rota_idempotency_keys WHERE run_id IN (SELECT id FROM doomed))
DELETE FROM rota_runs_history_default WHERE id IN (SELECT id FROM doomed)
RETURNING id;
