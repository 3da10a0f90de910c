-- A claimed run's lease: renewing it, writing its outcome, handing it back, and the
-- reaper's writes once it expired. Every write names the run's fence.
--
-- These writes find their runs by id, one lookup per run, and test the state as
-- ``r.state || ''``: that hides the test from the planner's partial-index matching.
-- Written plainly, it lets the planner pick rota_runs_leased whenever its statistics
-- say few runs are held (e.g. analysed just after a bulk enqueue), and that plan joins
-- EVERY held lease against every row of the batch: 100 x 800 comparisons per
-- completion on a busy two-worker drain, instead of 100 index lookups. Each also names
-- every live state plainly: that test implies no partial index, and it lets the planner
-- read only the queue's partition (rota_runs_live, migration 20), not history.

-- name: renew
-- The first renewal also confirms the run is executing (Claimed -> Running).
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
UPDATE rota_runs r
SET lease_expires_at = t.now + make_interval(secs => %(lease_seconds)s),
    state = 'running'
FROM unnest(%(id)b::bigint[], %(fence)b::bigint[]) AS l(id, fence), t
WHERE r.id = l.id AND r.fence = l.fence AND r.state || '' IN ('claimed', 'running')
      AND r.state IN ('pending', 'claimed', 'running', 'retrying', 'waiting')
RETURNING r.id, r.cancel_requested, r.lease_expires_at;

-- name: complete
-- Fenced: a stale worker's outcome matches no row and is dropped. The attempt row is
-- written in the same statement, so run and history never disagree.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
-- The arrays pass through a materialized CTE so that no plan knows the batch's size. A
-- plan made for the values counted the batch exactly where the generic plan assumes 10
-- rows, so for a batch of one or two runs (an idle worker's) it looked cheaper, and the
-- server planned every such completion anew (0.6 ms each). Priced alike, the generic
-- plan is kept once the server has made five for the values (test_store_claim_plan).
batch AS MATERIALIZED (
    SELECT %(id)b::bigint[] AS id, %(fence)b::bigint[] AS fence, %(state)b::text[] AS state,
           %(outcome)b::text[] AS outcome, %(result)b::text[] AS result,
           %(error)b::text[] AS error, %(retry_delay)b::double precision[] AS retry_delay
),
input AS (
    SELECT c.* FROM batch b,
           unnest(b.id, b.fence, b.state, b.outcome, b.result, b.error, b.retry_delay)
           AS c(id, fence, state, outcome, result, error, retry_delay)
),
done AS (
    UPDATE rota_runs r
    -- domain/settle.py completed_state: a cancel request outranks a retry and a success
    -- (the handler returned before its worker learned of the cancel).
    SET state = CASE WHEN c.state IN ('retrying', 'succeeded') AND r.cancel_requested
                     THEN 'cancelled' ELSE c.state END,
        result = CASE WHEN r.cancel_requested THEN NULL ELSE c.result::jsonb END,
        error = CASE WHEN c.state = 'succeeded' AND r.cancel_requested
                     THEN 'cancelled by request' ELSE c.error END,
        lease_expires_at = NULL,
        lost_count = 0,
        -- The database failed the attempt, not the handler: the attempt is given back
        -- (as a release does), so an outage costs no attempts.
        attempt = CASE WHEN c.outcome = 'infrastructure' THEN r.attempt - 1 ELSE r.attempt END,
        -- domain/settle.py retry_sort_at: due at the database's now + delay, and
        -- sort_at keeps its lead over run_at.
        sort_at = CASE WHEN c.retry_delay IS NULL THEN r.sort_at
                       ELSE t.now + make_interval(secs => c.retry_delay) - (r.run_at - r.sort_at) END,
        run_at = CASE WHEN c.retry_delay IS NULL THEN r.run_at
                      ELSE t.now + make_interval(secs => c.retry_delay) END,
        finished_at = CASE WHEN c.state = 'retrying' AND NOT r.cancel_requested THEN NULL
                           ELSE t.now END
    FROM input c, t
    WHERE r.id = c.id AND r.fence = c.fence AND r.state || '' IN ('claimed', 'running')
      AND r.state IN ('pending', 'claimed', 'running', 'retrying', 'waiting')
      -- With judge_breakers (a constant: the query is loaded once per value, so the
      -- common plan has no breaker in it; queries.py PLANNED_PER_FLAG), an outcome a
      -- circuit breaker must judge is left out, for the caller to write with the
      -- breaker's move in one transaction (ADR 0016): a failure (domain/breakers.py
      -- is_failure) of a handler with a rule, and a success unless it changes nothing
      -- (no rate counted, the breaker closed with no streak).
      -- The tables are read once each (arrays): subqueries here made the planner judge
      -- a scan of every held run cheaper than the lookups by id (test_store_claim_plan).
      AND NOT (%(judge_breakers)s::boolean AND (
          (c.outcome IN ('failed', 'timed_out')
           AND r.handler = ANY (ARRAY(SELECT handler FROM rota_breaker_rules)))
          OR (c.outcome = 'succeeded'
              AND (r.handler = ANY (ARRAY(SELECT handler FROM rota_breaker_rules
                                          WHERE failure_rate IS NOT NULL))
                   OR ROW(r.handler, COALESCE(r.breaker_key, '')) = ANY (ARRAY(
                       SELECT ROW(handler, breaker_key) FROM rota_breakers
                       WHERE state <> 'closed' OR failures > 0))))))
    RETURNING r.id, r.fence,
              CASE WHEN c.outcome = 'infrastructure' THEN r.attempt + 1 ELSE r.attempt END
                  AS attempt,
              r.worker_id, r.started_at, c.outcome, c.error, r.concurrency_key,
              r.state, r.namespace, r.handler, r.queue, r.breaker_key
),
events AS (
    -- The webhook outbox, in this same statement (webhooks.sql, ADR 0017); the CASE
    -- is domain/webhooks.py EVENT_OF_RUN_STATE (tests/contract/test_store_webhooks.py
    -- parses it), and reap's events CTE is this one word for word
    -- (tests/store/test_sql_copies.py).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, CASE WHEN s.event_types LIKE '%%,' || d.event_type || ',%%'
                      THEN d.event_type ELSE 'run.failed' END,
           d.id, d.namespace, d.handler, d.queue, d.state, d.attempt, t.now, t.now
    FROM (SELECT *, CASE state WHEN 'succeeded' THEN 'run.succeeded'
                               WHEN 'failed' THEN 'run.failed'
                               WHEN 'timed_out' THEN 'run.timed_out'
                               WHEN 'dead_lettered' THEN 'run.dead_lettered'
                               WHEN 'cancelled' THEN 'run.cancelled'
                               WHEN 'retrying' THEN 'run.retrying'
                               WHEN 'skipped' THEN 'run.skipped'
                               END AS event_type
          FROM done) d
    CROSS JOIN t
    -- domain/webhooks.py delivered_as: a subscription naming run.failed but not
    -- run.timed_out gets a timed-out run as run.failed (BROADER_EVENT).
    JOIN rota_webhook_subscriptions s
      ON s.event_types LIKE '%%,' || d.event_type || ',%%'
         OR (d.event_type = 'run.timed_out' AND s.event_types LIKE '%%,run.failed,%%')
    WHERE EXISTS (SELECT 1 FROM rota_webhook_subscriptions WHERE enabled)
      AND s.enabled AND s.namespace = d.namespace
      AND (s.handler IS NULL OR s.handler = d.handler)
      AND (s.queue IS NULL OR s.queue = d.queue)
),
recorded AS (
    -- A run this leaves succeeded keeps its attempt in its own row: its fence, worker,
    -- start and finish are the attempt's, and nothing changes them after (a success is
    -- final, and a replay is a new run). rota_run_attempts reads it as an attempt
    -- (migration 31). Every other outcome gets its row: a heap row and an index entry
    -- fewer per successful run (server CPU per run of the no-op drain 0.85x).
    INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                               outcome, error)
    SELECT d.id, d.fence, d.attempt, d.worker_id, d.started_at, t.now, d.outcome, d.error
    FROM done d, t
    WHERE d.state <> 'succeeded'
)
-- Every other run in done got its attempt row: a data-modifying CTE always runs to
-- completion, and a failed insert fails the whole statement. So done is read alone: a
-- join to recorded (two CTE scans, no statistics) was planned as a nested loop, batch x
-- batch.
SELECT d.id, d.handler, d.breaker_key, d.namespace
FROM done d
-- A keyed run that ends frees a slot of its key: wake the workers waiting on it now
-- rather than at their next poll (one notification, delivered at commit).
UNION ALL
SELECT NULL, NULL, NULL, NULL FROM (SELECT pg_notify('rota_wakeup', '') FROM done
                              WHERE concurrency_key IS NOT NULL LIMIT 1) AS wake;

-- name: recorded_outcomes
-- After an ambiguous commit: which of these outcomes did land? The outcome must match,
-- since the reaper records a 'lost' attempt under the same fence. A success landed if
-- its run is succeeded under that fence (rota_run_attempts reads the run's row as its
-- attempt): only the completion holding that fence could have made it so.
SELECT a.run_id AS id FROM rota_run_attempts a
JOIN unnest(%(id)b::bigint[], %(fence)b::bigint[], %(outcome)b::text[])
     AS l(id, fence, outcome)
  ON a.run_id = l.id AND a.fence = l.fence AND a.outcome = l.outcome;

-- name: release
-- A graceful hand-back: the run is claimable again at once and the attempt is not spent.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
released AS (
    UPDATE rota_runs r
    -- domain/settle.py released_state
    SET state = CASE WHEN r.cancel_requested THEN 'cancelled' ELSE 'pending' END,
        finished_at = CASE WHEN r.cancel_requested THEN t.now END,
        attempt = r.attempt - 1, lease_expires_at = NULL
    FROM unnest(%(id)b::bigint[], %(fence)b::bigint[]) AS l(id, fence), t
    WHERE r.id = l.id AND r.fence = l.fence AND r.state || '' IN ('claimed', 'running')
      AND r.state IN ('pending', 'claimed', 'running', 'retrying', 'waiting')
    RETURNING r.id, r.fence, r.attempt + 1 AS attempt, r.worker_id, r.started_at,
              r.state, r.namespace, r.handler, r.queue
),
events AS (
    -- run.cancelled enters the webhook outbox in this same statement (ADR 0017).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.cancelled', d.id, d.namespace, d.handler, d.queue, 'cancelled', d.attempt,
           t.now, t.now
    FROM t, released d
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = d.namespace AND s.event_types LIKE '%%,run.cancelled,%%'
     AND (s.handler IS NULL OR s.handler = d.handler) AND (s.queue IS NULL OR s.queue = d.queue)
    WHERE d.state = 'cancelled'
),
recorded AS (
    INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                               outcome, error)
    SELECT id, fence, attempt, worker_id, started_at, t.now, 'released', %(attempt_error)s
    FROM released, t
    RETURNING run_id
)
SELECT run_id AS id, pg_notify('rota_wakeup', '') FROM recorded;

-- name: expired_leases
-- Leases are judged by the database clock only. Locked, so two reapers never judge
-- the same run; the verdict is domain/settle.py's reap_verdict.
SELECT id, fence, attempt, max_attempts, lost_count, cancel_requested, worker_id
FROM rota_runs
WHERE state IN ('claimed', 'running')
  AND lease_expires_at < COALESCE(%(now)s::timestamptz, now())
ORDER BY lease_expires_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: reap
-- Writes the reaper's verdicts, fenced, with a 'lost' attempt for each.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
input AS (
    SELECT * FROM unnest(%(id)b::bigint[], %(fence)b::bigint[], %(state)b::text[],
                         %(error)b::text[], %(attempt_error)b::text[])
           AS v(id, fence, state, error, attempt_error)
),
reaped AS (
    UPDATE rota_runs r
    SET state = v.state,
        lost_count = r.lost_count + 1,
        lease_expires_at = NULL,
        error = COALESCE(v.error, r.error),
        finished_at = CASE WHEN v.state = 'pending' THEN NULL ELSE t.now END
    FROM input v, t
    WHERE r.id = v.id AND r.fence = v.fence AND r.state || '' IN ('claimed', 'running')
      AND r.state IN ('pending', 'claimed', 'running', 'retrying', 'waiting')
    RETURNING r.id, r.fence, r.attempt, r.worker_id, r.started_at, r.state, v.attempt_error,
              r.namespace, r.handler, r.queue
),
events AS (
    -- The webhook outbox, in this same statement: complete's events CTE, word for
    -- word but for its source (tests/store/test_sql_copies.py); only dead_lettered
    -- and cancelled map to an event here.
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, CASE WHEN s.event_types LIKE '%%,' || d.event_type || ',%%'
                      THEN d.event_type ELSE 'run.failed' END,
           d.id, d.namespace, d.handler, d.queue, d.state, d.attempt, t.now, t.now
    FROM (SELECT *, CASE state WHEN 'succeeded' THEN 'run.succeeded'
                               WHEN 'failed' THEN 'run.failed'
                               WHEN 'timed_out' THEN 'run.timed_out'
                               WHEN 'dead_lettered' THEN 'run.dead_lettered'
                               WHEN 'cancelled' THEN 'run.cancelled'
                               WHEN 'retrying' THEN 'run.retrying'
                               WHEN 'skipped' THEN 'run.skipped'
                               END AS event_type
          FROM reaped) d
    CROSS JOIN t
    -- domain/webhooks.py delivered_as: a subscription naming run.failed but not
    -- run.timed_out gets a timed-out run as run.failed (BROADER_EVENT).
    JOIN rota_webhook_subscriptions s
      ON s.event_types LIKE '%%,' || d.event_type || ',%%'
         OR (d.event_type = 'run.timed_out' AND s.event_types LIKE '%%,run.failed,%%')
    WHERE EXISTS (SELECT 1 FROM rota_webhook_subscriptions WHERE enabled)
      AND s.enabled AND s.namespace = d.namespace
      AND (s.handler IS NULL OR s.handler = d.handler)
      AND (s.queue IS NULL OR s.queue = d.queue)
),
recorded AS (
    INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                               outcome, error)
    SELECT id, fence, attempt, worker_id, started_at, t.now, 'lost', attempt_error
    FROM reaped, t
    RETURNING run_id
)
SELECT r.id, r.fence, r.state, pg_notify('rota_wakeup', '') FROM reaped r;
