-- Runs: creating, steering and pruning them. Named queries for SQLite: instants are
-- REAL unix seconds, :now is always bound (the dialect reads the database clock once
-- per transaction when the caller passes none), and every write runs inside BEGIN
-- IMMEDIATE, so SQLite's single writer lock makes each one compare-and-set. A query
-- may be several statements: they run in order, and the last one's rows are its
-- result. A batched query runs once per item in one transaction, unless it reads
-- :items, the whole batch as one JSON array (leases.sql, store/sqlite/dialect.py).

-- name: db_now
SELECT (julianday('now') - 2440587.5) * 86400.0 AS now;

-- name: insert_runs
INSERT INTO rota_runs_live (namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, idempotency_key, replay_of, job_id,
                       slot_at, tags, concurrency_key, concurrency_limit, deadline,
                       correlation_id, trace_context, rate_key, breaker_key,
                       owner, labels, created_at)
VALUES (:namespace, :handler, :queue, :payload, :priority, COALESCE(:run_at, :now),
        COALESCE(:run_at, :now) - :priority * :aging_seconds,
        :max_attempts, :timeout_seconds, :idempotency_key, :replay_of, :job_id, :slot_at,
        :tags, :concurrency_key, :concurrency_limit, :deadline, :correlation_id,
        :trace_context, :rate_key, :breaker_key, :owner, :labels, :now)
ON CONFLICT (namespace, handler, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING id, namespace, handler, idempotency_key;

-- name: existing_by_idempotency_key
SELECT id, namespace, handler, idempotency_key FROM rota_runs
WHERE idempotency_key IN (SELECT value FROM json_each(:keys));

-- name: append_logs
-- Only under the attempt's fence: a worker that lost its lease stores nothing. Set-based
-- (:items, as leases.sql): a batch of lines is one statement; the lines keep their
-- order (ids are given in the SELECT's order).
INSERT INTO rota_run_logs (run_id, attempt, at, level, message, fields)
SELECT l.value ->> 'run_id', l.value ->> 'attempt', l.value ->> 'at', l.value ->> 'level',
       l.value ->> 'message', l.value ->> 'fields'
FROM json_each(:items) AS l
WHERE EXISTS (SELECT 1 FROM rota_runs r
              WHERE r.id = l.value ->> 'run_id' AND r.fence = l.value ->> 'fence')
ORDER BY l.key
RETURNING id;

-- name: cancel_waiting
-- run.cancelled enters the webhook outbox in this same transaction (ADR 0017).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.cancelled', r.id, r.namespace, r.handler, r.queue, 'cancelled', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.cancelled,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = :id AND r.state IN ('pending', 'retrying');
UPDATE rota_runs_live
SET state = 'cancelled', finished_at = :now, error = :error
WHERE id = :id AND state IN ('pending', 'retrying')
RETURNING id;

-- name: request_cancel_active
UPDATE rota_runs_live SET cancel_requested = 1
WHERE id = :id AND state IN ('claimed', 'running')
RETURNING id;

-- name: retire_history
-- History is one table here, pruned in batches by prune_finished; nothing to retire.
SELECT 0 AS runs;

-- name: prune_finished
-- Three deletes of the same runs: each picks them alike (the runs are deleted last).
-- A workflow's steps go with their workflow run (prune_workflow_runs).
DELETE FROM rota_attempts WHERE run_id IN (
    SELECT id FROM rota_runs_history WHERE finished_at IS NOT NULL AND finished_at < :older_than
      AND workflow_run_id IS NULL
    ORDER BY finished_at, id LIMIT :limit);
DELETE FROM rota_run_logs WHERE run_id IN (
    SELECT id FROM rota_runs_history WHERE finished_at IS NOT NULL AND finished_at < :older_than
      AND workflow_run_id IS NULL
    ORDER BY finished_at, id LIMIT :limit);
DELETE FROM rota_runs_history WHERE id IN (
    SELECT id FROM rota_runs_history WHERE finished_at IS NOT NULL AND finished_at < :older_than
      AND workflow_run_id IS NULL
    ORDER BY finished_at, id LIMIT :limit)
RETURNING id;
