-- Named queries for SQLite. Instants are REAL unix seconds; :now is always bound (the
-- adapter reads the database clock first when the caller passes none). Every write runs
-- inside BEGIN IMMEDIATE, so SQLite's single writer lock makes each one compare-and-set.
-- A query PostgreSQL runs once over arrays (insert_runs, append_logs, advance_jobs,
-- recorded_outcomes) keeps its name here and runs once per row in that transaction.

-- name: db_now
SELECT (julianday('now') - 2440587.5) * 86400.0;

-- name: insert_runs
INSERT INTO rota_runs (namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, idempotency_key, replay_of, job_id,
                       slot_at, tags, concurrency_key, concurrency_limit, deadline,
                       correlation_id, created_at)
VALUES (:namespace, :handler, :queue, :payload, :priority, :run_at,
        :run_at - :priority * :aging_seconds,
        :max_attempts, :timeout_seconds, :idempotency_key, :replay_of, :job_id, :slot_at,
        :tags, :concurrency_key, :concurrency_limit, :deadline, :correlation_id, :now)
ON CONFLICT (namespace, handler, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING id;

-- name: existing_by_idempotency_key
SELECT id FROM rota_runs
WHERE namespace = :namespace AND handler = :handler AND idempotency_key = :idempotency_key;

-- name: claim_candidates
-- The plain path, for runs no limit applies to: one index range scan per queue; the
-- adapter merges them by (sort_at, id). Tags: every tag the run needs is the worker's.
SELECT id, sort_at FROM rota_runs
WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL
  AND queue = :queue AND run_at <= :now
  AND handler NOT IN (SELECT value FROM json_each(:limited_handlers))
  AND (tags IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(rota_runs.tags)
                                   WHERE value NOT IN (SELECT value FROM json_each(:tags))))
  AND (deadline IS NULL OR deadline >= :now OR attempt > 0)
ORDER BY sort_at, id
LIMIT :limit;

-- name: anything_due
-- A read before the write lock: an idle worker's poll must not take SQLite's single
-- writer lock (a worker paused inside a write transaction stalls every other process).
SELECT EXISTS (
    SELECT 1 FROM rota_runs
    WHERE state IN ('pending', 'retrying') AND run_at <= :now
      AND queue IN (SELECT value FROM json_each(:queues)));

-- name: limited_candidates
-- Runs some limit applies to, in priority order, skipping groups already full.
SELECT id, queue, handler, concurrency_key, concurrency_limit, sort_at FROM rota_runs
WHERE state IN ('pending', 'retrying') AND queue = :queue AND run_at <= :now
  AND (concurrency_key IS NOT NULL
       OR handler IN (SELECT value FROM json_each(:limited_handlers))
       OR :queue_limited OR :global_limit)
  AND (concurrency_key IS NULL
       OR concurrency_key NOT IN (SELECT value FROM json_each(:full_keys)))
  AND handler NOT IN (SELECT value FROM json_each(:full_handlers))
  AND id NOT IN (SELECT value FROM json_each(:chosen))
  AND (tags IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(rota_runs.tags)
                                   WHERE value NOT IN (SELECT value FROM json_each(:tags))))
  AND (deadline IS NULL OR deadline >= :now OR attempt > 0)
ORDER BY sort_at, id
LIMIT :window;

-- name: limits
SELECT scope, name, max_running FROM rota_limits;

-- name: active_groups
SELECT queue, handler, concurrency_key, min(concurrency_limit), count(*)
FROM rota_runs
WHERE state IN ('claimed', 'running')
GROUP BY queue, handler, concurrency_key;

-- name: claim
UPDATE rota_runs
SET state = 'claimed',
    attempt = attempt + 1,
    fence = fence + 1,
    worker_id = :worker_id,
    started_at = :now,
    lease_expires_at = :now + :lease_seconds
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('pending', 'retrying')
RETURNING id, handler, payload, queue, attempt, max_attempts, fence, timeout_seconds,
          lost_count, idempotency_key, lease_expires_at, correlation_id;

-- name: renew
UPDATE rota_runs
SET lease_expires_at = :now + :lease_seconds, state = 'running'
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running')
RETURNING id, cancel_requested, lease_expires_at;

-- name: record_attempt
-- Runs before the fenced update below, reading the row it is about to change.
INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                           outcome, error)
SELECT id, fence, attempt, worker_id, started_at, :now, :outcome, :attempt_error
FROM rota_runs
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running');

-- name: complete
UPDATE rota_runs
-- A cancel request outranks a retry: the run is not tried again.
SET state = CASE WHEN :state = 'retrying' AND cancel_requested THEN 'cancelled' ELSE :state END,
    result = :result,
    error = :error,
    lease_expires_at = NULL,
    lost_count = 0,
    -- The database failed the attempt, not the handler: the attempt is given back.
    attempt = CASE WHEN :outcome = 'infrastructure' THEN attempt - 1 ELSE attempt END,
    sort_at = CASE WHEN :retry_delay IS NULL THEN sort_at
                   ELSE :now + :retry_delay - (run_at - sort_at) END,
    run_at = CASE WHEN :retry_delay IS NULL THEN run_at ELSE :now + :retry_delay END,
    finished_at = CASE WHEN :state = 'retrying' AND NOT cancel_requested THEN NULL ELSE :now END
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running');

-- name: recorded_outcomes
SELECT run_id FROM rota_attempts WHERE run_id = :id AND fence = :fence AND outcome = :outcome;

-- name: release
UPDATE rota_runs
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'pending' END,
    finished_at = CASE WHEN cancel_requested THEN :now END,
    attempt = attempt - 1, lease_expires_at = NULL
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running');

-- name: leader_term_holds
SELECT :term IS NULL OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = :term);

-- name: expired_leases
SELECT id, worker_id FROM rota_runs
WHERE state IN ('claimed', 'running') AND lease_expires_at < :now
ORDER BY lease_expires_at
LIMIT :limit;

-- name: reap
-- A run someone asked to cancel stays cancelled; poison and spent runs are
-- dead-lettered; the rest go back to pending.
UPDATE rota_runs
SET state = CASE WHEN cancel_requested THEN 'cancelled'
                 WHEN attempt >= max_attempts OR lost_count + 1 >= :poison_after
                     THEN 'dead_lettered'
                 ELSE 'pending' END,
    error = CASE
        WHEN cancel_requested THEN 'cancelled by request (its worker was lost before it stopped)'
        WHEN lost_count + 1 >= :poison_after
            THEN 'poison: lost its worker ' || (lost_count + 1) || ' times in a row'
        WHEN attempt >= max_attempts
            THEN 'lease expired on the last attempt (worker ' || COALESCE(worker_id, '?') || ')'
        ELSE error END,
    finished_at = CASE
        WHEN cancel_requested OR attempt >= max_attempts OR lost_count + 1 >= :poison_after
            THEN :now END,
    lost_count = lost_count + 1,
    lease_expires_at = NULL
WHERE id = :id AND state IN ('claimed', 'running')
RETURNING id, fence, state;

-- name: prune_attempts
DELETE FROM rota_attempts WHERE run_id IN (SELECT value FROM json_each(:ids));

-- name: prune_logs
DELETE FROM rota_run_logs WHERE run_id IN (SELECT value FROM json_each(:ids));

-- name: prune_runs
DELETE FROM rota_runs WHERE id IN (SELECT value FROM json_each(:ids));

-- name: prunable
SELECT id FROM rota_runs
WHERE finished_at IS NOT NULL AND finished_at < :older_than
ORDER BY finished_at
LIMIT :limit;

-- name: append_logs
INSERT INTO rota_run_logs (run_id, attempt, at, level, message, fields)
VALUES (:run_id, :attempt, :at, :level, :message, :fields);

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
SELECT * FROM rota_attempts WHERE run_id = :id ORDER BY fence;

-- name: logs
SELECT * FROM rota_run_logs WHERE run_id = :id ORDER BY id;

-- name: cancel_waiting
UPDATE rota_runs
SET state = 'cancelled', finished_at = :now, error = 'cancelled by request'
WHERE id = :id AND state IN ('pending', 'retrying')
RETURNING id;

-- name: request_cancel_active
UPDATE rota_runs SET cancel_requested = 1
WHERE id = :id AND state IN ('claimed', 'running')
RETURNING id;

-- name: save_job
INSERT INTO rota_jobs (namespace, name, spec, cursor, next_fire_at, created_at, updated_at)
VALUES (:namespace, :name, :spec, :cursor, :next_fire_at, :now, :now)
ON CONFLICT (namespace, name) DO UPDATE
SET spec = excluded.spec, cursor = excluded.cursor, next_fire_at = excluded.next_fire_at,
    updated_at = excluded.updated_at,
    -- an update may well fix what failed: plan it again at once
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
RETURNING *;

-- name: get_job
SELECT * FROM rota_jobs WHERE namespace = :namespace AND name = :name;

-- name: get_job_by_id
SELECT * FROM rota_jobs WHERE id = :id;

-- name: list_jobs
SELECT * FROM rota_jobs
WHERE (:namespace IS NULL OR namespace = :namespace)
ORDER BY namespace, name;

-- name: delete_job
DELETE FROM rota_jobs WHERE namespace = :namespace AND name = :name RETURNING id;

-- name: set_job_paused
UPDATE rota_jobs
SET cursor = CASE WHEN paused AND NOT :paused THEN :cursor ELSE cursor END,
    next_fire_at = CASE WHEN paused AND NOT :paused THEN :next_fire_at ELSE next_fire_at END,
    paused = :paused,
    planning_retry_at = CASE WHEN NOT :paused THEN NULL ELSE planning_retry_at END,
    updated_at = :now
WHERE namespace = :namespace AND name = :name
RETURNING *;

-- name: due_jobs
-- A job set aside after a planning error waits for its retry instant.
SELECT * FROM rota_jobs
WHERE NOT paused AND next_fire_at <= :until
  AND (planning_retry_at IS NULL OR planning_retry_at <= :until)
ORDER BY next_fire_at
LIMIT :limit;

-- name: job_run_counts
SELECT count(*) FILTER (WHERE state IN ('claimed', 'running')),
       count(*) FILTER (WHERE state IN ('pending', 'retrying'))
FROM rota_runs
WHERE job_id = :job_id AND state IN ('pending', 'retrying', 'claimed', 'running');

-- name: advance_jobs
-- Compare-and-set on the cursor; a stale leader term moves nothing.
UPDATE rota_jobs
SET cursor = :cursor, next_fire_at = :next_fire_at, updated_at = :now,
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
WHERE id = :id AND cursor = :expected_cursor AND NOT paused
  AND (:term IS NULL OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = :term))
RETURNING id;

-- name: set_job_aside
-- Planning this job failed: say why, and when to try again. Its cursor stays.
UPDATE rota_jobs
SET planning_error = :error, planning_failed_at = :now,
    planning_failures = planning_failures + 1, planning_retry_at = :retry_at
WHERE id = :id
RETURNING id;

-- name: acquire_leadership
INSERT INTO rota_leases (name, holder, term, acquired_at, expires_at)
VALUES ('leader', :holder, 1, :now, :now + :lease_seconds)
ON CONFLICT (name) DO UPDATE
SET term = CASE WHEN holder = excluded.holder AND term = :term THEN term ELSE term + 1 END,
    acquired_at = CASE WHEN holder = excluded.holder AND term = :term THEN acquired_at
                       ELSE excluded.acquired_at END,
    holder = excluded.holder,
    expires_at = excluded.expires_at
WHERE (holder = excluded.holder AND term = :term) OR expires_at < excluded.acquired_at
RETURNING term;

-- name: resign_leadership
UPDATE rota_leases SET expires_at = :now - 0.001
WHERE name = 'leader' AND holder = :holder AND term = :term;

-- name: leader
SELECT holder, term, acquired_at, expires_at FROM rota_leases WHERE name = 'leader';

-- name: leader_history
SELECT term, holder, acquired_at FROM rota_leader_terms ORDER BY term DESC LIMIT :limit;

-- name: set_limit
INSERT INTO rota_limits (scope, name, max_running) VALUES (:scope, :name, :max_running)
ON CONFLICT (scope, name) DO UPDATE SET max_running = excluded.max_running;

-- name: clear_limit
DELETE FROM rota_limits WHERE scope = :scope AND name = :name RETURNING name;

-- name: expire_deadlines
UPDATE rota_runs
SET state = 'cancelled', finished_at = :now,
    error = 'deadline_exceeded: not started by ' || strftime('%Y-%m-%dT%H:%M:%SZ', deadline, 'unixepoch')
WHERE state = 'pending' AND attempt = 0 AND deadline < :now
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

-- name: silent_workers
SELECT node_id FROM rota_workers WHERE state <> 'dead' AND heartbeat_at < :now - :dead_after;

-- name: mark_dead
UPDATE rota_workers SET state = 'dead' WHERE node_id = :node_id;

-- name: end_leases_of
UPDATE rota_runs SET lease_expires_at = :now - 0.001
WHERE state IN ('claimed', 'running') AND worker_id = :node_id;

-- name: prune_workers
DELETE FROM rota_workers WHERE state = 'dead' AND heartbeat_at < :older_than;

-- name: unclaimable_runs
SELECT r.id, r.queue, r.tags FROM rota_runs r
WHERE r.state IN ('pending', 'retrying') AND r.tags IS NOT NULL AND r.run_at <= :now
  AND NOT EXISTS (
      SELECT 1 FROM rota_workers w
      WHERE w.state = 'active'
        AND r.queue IN (SELECT value FROM json_each(w.queues))
        AND NOT EXISTS (SELECT 1 FROM json_each(r.tags)
                        WHERE value NOT IN (SELECT value FROM json_each(w.tags))))
ORDER BY r.id
LIMIT :limit;

-- == api ==

-- name: search_runs
-- Newest first by id (keyset: id < before_id). Each filter is skipped when NULL; list
-- parameters are JSON arrays.
SELECT r.* FROM rota_runs r
WHERE (:namespaces IS NULL OR r.namespace IN (SELECT value FROM json_each(:namespaces)))
  AND (:states IS NULL OR r.state IN (SELECT value FROM json_each(:states)))
  AND (:handler IS NULL OR r.handler = :handler)
  AND (:queue IS NULL OR r.queue = :queue)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(r.tags) WHERE value = :tag))
  AND (:job_id IS NULL OR r.job_id = :job_id)
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
SELECT min(run_at) FROM rota_runs
WHERE state IN ('pending', 'retrying') AND run_at <= :now;

-- name: insert_api_key
INSERT INTO rota_api_keys (key_id, secret_hash, name, scopes, namespaces, created_by,
                           created_at)
VALUES (:key_id, :secret_hash, :name, :scopes, :namespaces, :created_by, :now)
RETURNING *;

-- name: get_api_key
SELECT * FROM rota_api_keys WHERE key_id = :key_id;

-- name: list_api_keys
SELECT * FROM rota_api_keys ORDER BY created_at, key_id;

-- name: revoke_api_key
UPDATE rota_api_keys SET revoked_at = COALESCE(revoked_at, :now)
WHERE key_id = :key_id
RETURNING *;

-- name: append_audit
INSERT INTO rota_audit_log (at, actor, action, target, namespace, status, outcome,
                            correlation_id, detail)
VALUES (:now, :actor, :action, :target, :namespace, :status, :outcome, :correlation_id,
        :detail)
RETURNING id;

-- name: list_audit
SELECT * FROM rota_audit_log
WHERE (:namespaces IS NULL OR namespace IN (SELECT value FROM json_each(:namespaces)))
  AND (:before_id IS NULL OR id < :before_id)
ORDER BY id DESC
LIMIT :limit;

-- name: live_queue_counts
-- Unfinished runs and dead letters per namespace, queue and state (rota_runs_state_id).
SELECT namespace, queue, state, count(*) AS count,
       min(CASE WHEN state IN ('pending', 'retrying') AND run_at <= :now THEN run_at END)
           AS oldest_due_at
FROM rota_runs
WHERE state IN ('pending', 'claimed', 'running', 'retrying', 'dead_lettered')
GROUP BY namespace, queue, state
ORDER BY namespace, queue, state;

-- name: finished_counts
-- Runs finished since :since per epoch-aligned bucket (rota_runs_finished).
SELECT CAST(finished_at / :bucket AS INTEGER) * :bucket AS bucket_start,
       namespace, queue, state, count(*) AS count
FROM rota_runs
WHERE finished_at IS NOT NULL AND finished_at >= :since
GROUP BY 1, namespace, queue, state
ORDER BY 1, namespace, queue, state;
