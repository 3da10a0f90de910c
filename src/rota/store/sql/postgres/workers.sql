-- Claim-time limits, start-by deadlines and the worker registry.

-- name: limits
SELECT scope, name, max_running FROM rota_limits;

-- name: set_limit
INSERT INTO rota_limits (scope, name, max_running) VALUES (%(scope)s, %(name)s, %(max_running)s)
ON CONFLICT (scope, name) DO UPDATE SET max_running = EXCLUDED.max_running;

-- name: clear_limit
DELETE FROM rota_limits WHERE scope = %(scope)s AND name = %(name)s RETURNING name;

-- name: deadlines_passed
-- Runs never started by their deadline; locked, so two leaders never judge one run.
SELECT id, deadline FROM rota_runs
WHERE state = 'pending' AND attempt = 0
  AND deadline < COALESCE(%(now)s::timestamptz, now())
ORDER BY id
FOR UPDATE SKIP LOCKED;

-- name: expire_deadlines
-- A run not started by its deadline never runs (its error: domain/settle.py).
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
expired AS (
    UPDATE rota_runs r
    SET state = 'cancelled', finished_at = t.now, error = e.error
    FROM unnest(%(id)b::bigint[], %(error)b::text[]) AS e(id, error), t
    WHERE r.id = e.id AND r.state = 'pending' AND r.attempt = 0
    RETURNING r.id, r.namespace, r.handler, r.queue, r.attempt
),
events AS (
    -- run.cancelled enters the webhook outbox in this same statement (ADR 0017).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.cancelled', d.id, d.namespace, d.handler, d.queue, 'cancelled', d.attempt,
           t.now, t.now
    FROM t, expired d
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = d.namespace AND s.event_types LIKE '%%,run.cancelled,%%'
     AND (s.handler IS NULL OR s.handler = d.handler) AND (s.queue IS NULL OR s.queue = d.queue)
)
SELECT id FROM expired;

-- name: register_worker
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
INSERT INTO rota_workers (node_id, host, pid, version, queues, tags, concurrency, state,
                          started_at, heartbeat_at)
SELECT %(node_id)s, %(host)s, %(pid)s, %(version)s, %(queues)b::text[], %(tags)b::text[],
       %(concurrency)s, 'active', t.now, t.now FROM t
ON CONFLICT (node_id) DO UPDATE
SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
    queues = EXCLUDED.queues, tags = EXCLUDED.tags, concurrency = EXCLUDED.concurrency,
    state = 'active', started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at;

-- name: worker_heartbeat
-- A worker declared dead that is in fact alive (a long pause) comes back as active:
-- its runs were already taken back, and its stale writes are fenced out.
UPDATE rota_workers
SET heartbeat_at = COALESCE(%(now)s::timestamptz, now()),
    state = CASE WHEN state = 'dead' THEN 'active' ELSE state END
WHERE node_id = %(node_id)s
RETURNING state;

-- name: set_worker_state
UPDATE rota_workers SET state = %(state)s
WHERE node_id = %(node_id)s AND state <> 'dead'
RETURNING node_id;

-- name: deregister_worker
DELETE FROM rota_workers WHERE node_id = %(node_id)s;

-- name: list_workers
SELECT node_id, host, pid, version, queues, tags, concurrency, state, started_at, heartbeat_at
FROM rota_workers ORDER BY node_id;

-- name: mark_dead_workers
-- Workers silent for longer than dead_after are dead; their leases are ended now so
-- the reaper takes their runs back at once instead of waiting out each lease.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
dead AS (
    UPDATE rota_workers w SET state = 'dead'
    FROM t
    WHERE w.state <> 'dead'
      AND w.heartbeat_at < t.now - make_interval(secs => %(dead_after)s)
    RETURNING w.node_id
),
ended AS (
    UPDATE rota_runs r SET lease_expires_at = t.now - interval '1 millisecond'
    FROM t
    WHERE r.state IN ('claimed', 'running') AND r.worker_id IN (SELECT node_id FROM dead)
    RETURNING r.id
)
SELECT node_id, (SELECT count(*) FROM ended) AS leases_ended FROM dead;

-- name: prune_workers
DELETE FROM rota_workers
WHERE state = 'dead' AND heartbeat_at < %(older_than)s
RETURNING node_id;

-- name: unclaimable_runs
-- Due runs whose required tags no live worker serving their queue has.
SELECT r.id, r.queue, r.tags FROM rota_runs r
WHERE r.state IN ('pending', 'retrying') AND r.tags IS NOT NULL
  AND r.run_at <= COALESCE(%(now)s::timestamptz, now())
  AND NOT EXISTS (
      SELECT 1 FROM rota_workers w
      WHERE w.state = 'active' AND r.tags <@ w.tags AND r.queue = ANY(w.queues))
ORDER BY r.id
LIMIT %(limit)s;
