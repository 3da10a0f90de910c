-- A claimed run's lease: renewing it, writing its outcome, handing it back, and the
-- reaper's writes once it expired. Every write names the run's fence. Each attempt
-- row is written first, reading the run before the fenced update changes it.
--
-- The worker's batched writes (renew, complete) are set-based: :items is the whole
-- batch as one JSON array (dialect.py), read with json_each, so a batch is a few
-- statements however many runs it holds. They walk the batch first and find each run
-- by rowid, whatever statistics PRAGMA optimize recorded: CROSS JOIN fixes the order
-- for a SELECT, and ``+state`` keeps the state test off every index (an UPDATE ... FROM
-- driven from rota_runs_state_id walked every held run once per item of the batch).

-- name: renew
-- The first renewal also confirms the run is executing (Claimed -> Running).
UPDATE rota_runs_live
SET lease_expires_at = :now + :lease_seconds, state = 'running'
FROM (SELECT value ->> 'id' AS id, value ->> 'fence' AS fence FROM json_each(:items)) AS l
WHERE rota_runs_live.id = l.id AND rota_runs_live.fence = l.fence
  AND +rota_runs_live.state IN ('claimed', 'running')
RETURNING id, cancel_requested, lease_expires_at;

-- name: complete
-- The attempt row is written first, and only where the fence holds: the two statements
-- after it act only where it was (an attempt row under a fence that still holds can be
-- only this one), so each condition is written once.
-- With judge_breakers (a constant: the query is loaded once per value, queries.py
-- PLANNED_PER_FLAG), an outcome a circuit breaker must judge is left out, for the
-- caller to write with the breaker's move in one transaction (ADR 0016): a failure
-- (domain/breakers.py is_failure) of a handler with a rule, and a success unless it
-- changes nothing (no rate counted, the breaker closed with no streak).
INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                           outcome, error)
SELECT r.id, r.fence, r.attempt, r.worker_id, r.started_at, :now, o.outcome, o.error
FROM (SELECT value ->> 'id' AS id, value ->> 'fence' AS fence,
             value ->> 'outcome' AS outcome, value ->> 'error' AS error
      FROM json_each(:items)) AS o
CROSS JOIN rota_runs_live r
WHERE r.id = o.id AND r.fence = o.fence AND +r.state IN ('claimed', 'running')
  AND NOT (:judge_breakers AND (
      (o.outcome IN ('failed', 'timed_out')
       AND r.handler IN (SELECT handler FROM rota_breaker_rules))
      OR (o.outcome = 'succeeded'
          AND (r.handler IN (SELECT handler FROM rota_breaker_rules
                             WHERE failure_rate IS NOT NULL)
               OR (r.handler, COALESCE(r.breaker_key, '')) IN (
                   SELECT handler, breaker_key FROM rota_breakers
                   WHERE state <> 'closed' OR failures > 0)))));
-- The webhook outbox, in this same transaction (webhooks.sql, ADR 0017); the CASE is
-- domain/webhooks.py EVENT_OF_RUN_STATE (tests/contract/test_store_webhooks.py parses
-- it). The EXISTS guard makes it nearly free when nothing is subscribed. complete and
-- reap share all but where the batch comes from (tests/store/test_sql_copies.py).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, CASE WHEN s.event_types LIKE '%,' || e.event_type || ',%' THEN e.event_type
                  ELSE 'run.failed' END,
       r.id, r.namespace, r.handler, r.queue, e.state, r.attempt, :now, :now
FROM (SELECT id, fence, state,
             CASE state WHEN 'succeeded' THEN 'run.succeeded'
                        WHEN 'failed' THEN 'run.failed'
                        WHEN 'timed_out' THEN 'run.timed_out'
                        WHEN 'dead_lettered' THEN 'run.dead_lettered'
                        WHEN 'cancelled' THEN 'run.cancelled'
                        WHEN 'retrying' THEN 'run.retrying'
                        WHEN 'skipped' THEN 'run.skipped'
                        END AS event_type
      -- The state the UPDATE below writes (domain/settle.py completed_state).
      FROM (SELECT value ->> 'id' AS id, value ->> 'fence' AS fence,
                   CASE WHEN value ->> 'state' IN ('retrying', 'succeeded')
                         AND (SELECT cancel_requested FROM rota_runs_live
                              WHERE id = value ->> 'id')
                        THEN 'cancelled' ELSE value ->> 'state' END AS state
            FROM json_each(:items))) AS e
CROSS JOIN rota_runs_live r
JOIN rota_attempts a ON a.run_id = r.id AND a.fence = r.fence
-- domain/webhooks.py delivered_as: a subscription naming run.failed but not
-- run.timed_out gets a timed-out run as run.failed (BROADER_EVENT).
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace
 AND (s.event_types LIKE '%,' || e.event_type || ',%'
      OR (e.event_type = 'run.timed_out' AND s.event_types LIKE '%,run.failed,%'))
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = e.id AND r.fence = e.fence AND +r.state IN ('claimed', 'running')
  AND e.event_type IS NOT NULL
  AND EXISTS (SELECT 1 FROM rota_webhook_subscriptions WHERE enabled);
UPDATE rota_runs_live
-- domain/settle.py completed_state: a cancel request outranks a retry and a success
-- (the handler returned before its worker learned of the cancel).
SET state = CASE WHEN o.state IN ('retrying', 'succeeded') AND cancel_requested
                 THEN 'cancelled' ELSE o.state END,
    result = CASE WHEN cancel_requested THEN NULL ELSE o.result END,
    error = CASE WHEN o.state = 'succeeded' AND cancel_requested
                 THEN 'cancelled by request' ELSE o.error END,
    lease_expires_at = NULL,
    lost_count = 0,
    -- The database failed the attempt, not the handler: the attempt is given back.
    attempt = CASE WHEN o.outcome = 'infrastructure' THEN attempt - 1 ELSE attempt END,
    -- domain/settle.py retry_sort_at
    sort_at = CASE WHEN o.retry_delay IS NULL THEN sort_at
                   ELSE :now + o.retry_delay - (run_at - sort_at) END,
    run_at = CASE WHEN o.retry_delay IS NULL THEN run_at ELSE :now + o.retry_delay END,
    finished_at = CASE WHEN o.state = 'retrying' AND NOT cancel_requested THEN NULL
                       ELSE :now END
FROM (SELECT value ->> 'id' AS id, value ->> 'fence' AS fence, value ->> 'state' AS state,
             value ->> 'outcome' AS outcome, value ->> 'result' AS result,
             value ->> 'error' AS error, value ->> 'retry_delay' AS retry_delay
      FROM json_each(:items)) AS o
WHERE rota_runs_live.id = o.id AND rota_runs_live.fence = o.fence
  AND +rota_runs_live.state IN ('claimed', 'running')
  AND EXISTS (SELECT 1 FROM rota_attempts a
              WHERE a.run_id = rota_runs_live.id AND a.fence = rota_runs_live.fence)
RETURNING id, handler, breaker_key, namespace;

-- name: recorded_outcomes
SELECT run_id AS id FROM rota_run_attempts
WHERE run_id = :id AND fence = :fence AND outcome = :outcome;

-- name: release
INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                           outcome, error)
SELECT id, fence, attempt, worker_id, started_at, :now, 'released', :attempt_error
FROM rota_runs_live
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running');
-- A run asked to cancel ends cancelled: run.cancelled enters the webhook outbox in this
-- same transaction (ADR 0017).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.cancelled', r.id, r.namespace, r.handler, r.queue, 'cancelled', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.cancelled,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = :id AND r.fence = :fence AND r.state IN ('claimed', 'running')
  AND r.cancel_requested;
UPDATE rota_runs_live
-- domain/settle.py released_state
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'pending' END,
    finished_at = CASE WHEN cancel_requested THEN :now END,
    attempt = attempt - 1, lease_expires_at = NULL
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running')
RETURNING id;

-- name: expired_leases
-- Leases are judged by the database clock only; the verdict is domain/settle.py's
-- reap_verdict.
SELECT id, fence, attempt, max_attempts, lost_count, cancel_requested, worker_id
FROM rota_runs_live
WHERE state IN ('claimed', 'running') AND lease_expires_at < :now
ORDER BY lease_expires_at, id
LIMIT :limit;

-- name: reap
-- Writes one reaper's verdict, fenced, with a 'lost' attempt.
-- The webhook outbox, in this same transaction (webhooks.sql, ADR 0017); the CASE is
-- domain/webhooks.py EVENT_OF_RUN_STATE (tests/contract/test_store_webhooks.py parses
-- it). The EXISTS guard makes it nearly free when nothing is subscribed. complete and
-- reap share all but where the batch comes from (tests/store/test_sql_copies.py).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, CASE WHEN s.event_types LIKE '%,' || e.event_type || ',%' THEN e.event_type
                  ELSE 'run.failed' END,
       r.id, r.namespace, r.handler, r.queue, e.state, r.attempt, :now, :now
FROM (SELECT :state AS state,
             CASE :state WHEN 'succeeded' THEN 'run.succeeded'
                         WHEN 'failed' THEN 'run.failed'
                         WHEN 'timed_out' THEN 'run.timed_out'
                         WHEN 'dead_lettered' THEN 'run.dead_lettered'
                         WHEN 'cancelled' THEN 'run.cancelled'
                         WHEN 'retrying' THEN 'run.retrying'
                         WHEN 'skipped' THEN 'run.skipped'
                         END AS event_type) e
JOIN rota_runs_live r ON r.id = :id AND r.fence = :fence AND r.state IN ('claimed', 'running')
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace
 AND (s.event_types LIKE '%,' || e.event_type || ',%'
      OR (e.event_type = 'run.timed_out' AND s.event_types LIKE '%,run.failed,%'))
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE e.event_type IS NOT NULL
  AND EXISTS (SELECT 1 FROM rota_webhook_subscriptions WHERE enabled);
INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                           outcome, error)
SELECT id, fence, attempt, worker_id, started_at, :now, 'lost', :attempt_error
FROM rota_runs_live
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running');
UPDATE rota_runs_live
SET state = :state,
    lost_count = lost_count + 1,
    lease_expires_at = NULL,
    error = COALESCE(:error, error),
    finished_at = CASE WHEN :state = 'pending' THEN NULL ELSE :now END
WHERE id = :id AND fence = :fence AND state IN ('claimed', 'running')
RETURNING id, fence, state;
