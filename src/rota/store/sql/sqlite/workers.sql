-- Claim-time limits, start-by deadlines and the worker registry.

-- name: limits
SELECT scope, name, max_running FROM rota_limits;

-- name: set_limit
INSERT INTO rota_limits (scope, name, max_running) VALUES (:scope, :name, :max_running)
ON CONFLICT (scope, name) DO UPDATE SET max_running = excluded.max_running;

-- name: clear_limit
DELETE FROM rota_limits WHERE scope = :scope AND name = :name RETURNING name;

-- name: deadlines_passed
-- Runs never started by their deadline.
SELECT id, deadline FROM rota_runs_live
WHERE state = 'pending' AND attempt = 0 AND deadline < :now
ORDER BY id;

-- name: expire_deadlines
-- A run not started by its deadline never runs (its error: domain/settle.py).
-- run.cancelled enters the webhook outbox in this same transaction (ADR 0017).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.cancelled', r.id, r.namespace, r.handler, r.queue, 'cancelled', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.cancelled,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = :id AND r.state = 'pending' AND r.attempt = 0;
UPDATE rota_runs_live
SET state = 'cancelled', finished_at = :now, error = :error
WHERE id = :id AND state = 'pending' AND attempt = 0
RETURNING id;

-- name: register_worker
INSERT INTO rota_workers (node_id, host, pid, version, queues, tags, concurrency, state,
                          started_at, heartbeat_at)
VALUES (:node_id, :host, :pid, :version, :queues, :tags, :concurrency, 'active', :now, :now)
ON CONFLICT (node_id) DO UPDATE
SET host = excluded.host, pid = excluded.pid, version = excluded.version,
    queues = excluded.queues, tags = excluded.tags, concurrency = excluded.concurrency,
    state = 'active', started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at;

-- name: worker_heartbeat
-- A worker declared dead that is in fact alive (a long pause) comes back as active:
-- its runs were already taken back, and its stale writes are fenced out.
UPDATE rota_workers
SET heartbeat_at = :now, state = CASE WHEN state = 'dead' THEN 'active' ELSE state END
WHERE node_id = :node_id
RETURNING state;

-- name: set_worker_state
UPDATE rota_workers SET state = :state
WHERE node_id = :node_id AND state <> 'dead'
RETURNING node_id;

-- name: deregister_worker
DELETE FROM rota_workers WHERE node_id = :node_id;

-- name: list_workers
SELECT node_id, host, pid, version, queues, tags, concurrency, state, started_at, heartbeat_at
FROM rota_workers ORDER BY node_id;

-- name: mark_dead_workers
-- Workers silent for longer than dead_after are dead; their leases are ended now so
-- the reaper takes their runs back at once. Leases first: the workers are found
-- alike by both statements while still not marked dead.
UPDATE rota_runs_live SET lease_expires_at = :now - 0.001
WHERE state IN ('claimed', 'running') AND worker_id IN (
    SELECT node_id FROM rota_workers
    WHERE state <> 'dead' AND heartbeat_at < :now - :dead_after);
UPDATE rota_workers SET state = 'dead'
WHERE state <> 'dead' AND heartbeat_at < :now - :dead_after
RETURNING node_id;

-- name: prune_workers
DELETE FROM rota_workers WHERE state = 'dead' AND heartbeat_at < :older_than
RETURNING node_id;

-- name: unclaimable_runs
-- Due runs whose required tags no live worker serving their queue has.
SELECT r.id, r.queue, r.tags FROM rota_runs_live r
WHERE r.state IN ('pending', 'retrying') AND r.tags IS NOT NULL AND r.run_at <= :now
  AND NOT EXISTS (
      SELECT 1 FROM rota_workers w
      WHERE w.state = 'active'
        AND r.queue IN (SELECT value FROM json_each(w.queues))
        AND NOT EXISTS (SELECT 1 FROM json_each(r.tags)
                        WHERE value NOT IN (SELECT value FROM json_each(w.tags))))
ORDER BY r.id
LIMIT :limit;
