-- Claiming runs (see ADR 0008 for the limited path). SQLite has no LATERAL: a
-- correlated IN (... LIMIT) gives each queue its own bounded index range scan.

-- name: anything_due
-- A read before the write lock: an idle worker's poll must not take SQLite's single
-- writer lock (a worker paused inside a write transaction stalls every other process).
-- It also answers has_keyed_work, so a claim needs no third read.
SELECT EXISTS (
           SELECT 1 FROM rota_runs_live
           WHERE state IN ('pending', 'retrying') AND run_at <= :now
             AND queue IN (SELECT value FROM json_each(:queues))) AS due,
       -- INDEXED BY: the keyed runs' own index (usually empty), whatever the
       -- statistics say (stale ones made it walk every due run per poll).
       EXISTS (
           SELECT 1 FROM rota_runs_live INDEXED BY rota_runs_claimable_keyed
           WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
             AND queue IN (SELECT value FROM json_each(:queues)) AND run_at <= :now) AS keyed;

-- name: claim
-- The plain path, for runs no limit applies to. Tags: every tag the run needs is the
-- worker's.
UPDATE rota_runs_live
SET state = 'claimed',
    attempt = attempt + 1,
    fence = fence + 1,
    worker_id = :worker_id,
    started_at = :now,
    lease_expires_at = :now + :lease_seconds
WHERE id IN (
    -- NOT INDEXED: r is reached by rowid from the per-queue lists, whatever the
    -- planner's statistics say (PRAGMA optimize on a near-empty table once made it
    -- scan every row of rota_runs_live per claim; docs/benchmarks.md (m)).
    SELECT r.id FROM json_each(:queues) AS q, rota_runs_live AS r NOT INDEXED
    -- A paused queue gives nothing (ADR 0035), read in this statement: a pause holds
    -- from the next claim on every worker, whatever its cached paused set says.
    WHERE q.value NOT IN (SELECT name FROM rota_queues WHERE paused)
      AND r.id IN (
        SELECT id FROM rota_runs_live
        WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL
          AND queue = q.value AND run_at <= :now
          AND handler NOT IN (SELECT value FROM json_each(:limited_handlers))
          AND (tags IS NULL OR NOT EXISTS (
              SELECT 1 FROM json_each(rota_runs_live.tags)
              WHERE value NOT IN (SELECT value FROM json_each(:tags))))
          AND (deadline IS NULL OR deadline >= :now OR attempt > 0)
          -- A run whose breaker is open or half-open waits for the limited path (ADR 0016).
          -- Each row is checked only while some breaker is not closed: the first test
          -- is evaluated once per statement, and the common case stops there.
          AND (NOT (SELECT EXISTS (SELECT 1 FROM rota_breakers WHERE state <> 'closed'))
               OR NOT EXISTS (
                   SELECT 1 FROM rota_breakers b
                   WHERE b.handler = rota_runs_live.handler
                     AND b.breaker_key = COALESCE(rota_runs_live.breaker_key, '')
                     AND b.state <> 'closed'))
        ORDER BY sort_at, id
        LIMIT :limit)
    ORDER BY r.sort_at, r.id
    LIMIT :limit)
RETURNING id, handler, payload, queue, attempt, max_attempts, fence, timeout_seconds,
          lost_count, idempotency_key, lease_expires_at, correlation_id, job_id,
          :now - run_at AS pickup_delay, trace_context, step_input, slot_at;

-- name: next_due_in
-- Only runs not due yet: an idle worker sleeps to the earliest (at most a poll). A run
-- that fell due since the worker's empty claim looked (looked_ago seconds) counts, as
-- due now: it was in neither answer.
SELECT min(run_at) - :now AS seconds,
       min(CASE WHEN concurrency_key IS NOT NULL THEN run_at END) - :now AS keyed_seconds
FROM rota_runs_live
WHERE state IN ('pending', 'retrying') AND queue IN (SELECT value FROM json_each(:queues))
  AND run_at > :now - :looked_ago;

-- name: claim_lock
-- BEGIN IMMEDIATE already holds SQLite's one writer lock: limited claims are
-- serialised by the transaction itself.
SELECT 1 AS locked;

-- name: has_keyed_work
SELECT EXISTS (
    SELECT 1 FROM rota_runs_live INDEXED BY rota_runs_claimable_keyed  -- as in anything_due
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
      AND queue IN (SELECT value FROM json_each(:queues)) AND run_at <= :now) AS keyed;

-- name: active_groups
SELECT queue, handler, concurrency_key, min(concurrency_limit) AS key_limit, count(*) AS count
FROM rota_runs_live
WHERE state IN ('claimed', 'running')
GROUP BY queue, handler, concurrency_key;

-- name: limited_candidates
-- Runs some limit applies to (every due run when everything is set: the plain claim was
-- skipped, see ADR 0016), per queue in priority order, skipping groups already full.
-- With key_counts, each keyed row also carries what runs now of its key (count and
-- smallest limit, for the keys in the window only): when no queue, handler or global
-- limit is set, keys are all that count, and this replaces a GROUP BY over every held
-- run.
WITH c AS (
    SELECT r.id, r.queue, r.handler, r.concurrency_key, r.concurrency_limit, r.rate_key,
           r.breaker_key, r.sort_at
    FROM json_each(:queues) AS q, rota_runs_live AS r NOT INDEXED  -- by rowid, as in claim
    -- Unkeyed and keyed runs apart, each a range scan of its own partial index that
    -- stops after a window of matches (one scan with neither condition read every due
    -- run and sorted them, under the lock, on every limited claim). A paused queue
    -- gives nothing, as in claim.
    WHERE q.value NOT IN (SELECT name FROM rota_queues WHERE paused)
      AND r.id IN (
        SELECT id FROM (
            SELECT id FROM rota_runs_live INDEXED BY rota_runs_claimable
            WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL
              AND queue = q.value AND run_at <= :now
              AND (handler IN (SELECT value FROM json_each(:limited_handlers))
                   OR q.value IN (SELECT value FROM json_each(:limited_queues))
                   OR :global_limit OR :everything)
              AND handler NOT IN (SELECT value FROM json_each(:full_handlers))
              AND id NOT IN (SELECT value FROM json_each(:chosen))
              AND (tags IS NULL OR NOT EXISTS (
                  SELECT 1 FROM json_each(rota_runs_live.tags)
                  WHERE value NOT IN (SELECT value FROM json_each(:tags))))
              AND (deadline IS NULL OR deadline >= :now OR attempt > 0)
            ORDER BY sort_at, id
            LIMIT :window)
        UNION ALL
        SELECT id FROM (
            SELECT id FROM rota_runs_live INDEXED BY rota_runs_claimable_keyed
            WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
              AND queue = q.value AND run_at <= :now
              AND concurrency_key NOT IN (SELECT value FROM json_each(:full_keys))
              AND handler NOT IN (SELECT value FROM json_each(:full_handlers))
              AND id NOT IN (SELECT value FROM json_each(:chosen))
              AND (tags IS NULL OR NOT EXISTS (
                  SELECT 1 FROM json_each(rota_runs_live.tags)
                  WHERE value NOT IN (SELECT value FROM json_each(:tags))))
              AND (deadline IS NULL OR deadline >= :now OR attempt > 0)
            ORDER BY sort_at, id
            LIMIT :window))
    ORDER BY r.sort_at, r.id
    LIMIT :window
),
held AS (
    SELECT concurrency_key, count(*) AS key_running, min(concurrency_limit) AS key_limit
    FROM rota_runs_live
    -- The EXISTS is one test per statement: a window without keyed runs (a rated
    -- drain) reads no held run at all.
    WHERE :key_counts AND EXISTS (SELECT 1 FROM c WHERE concurrency_key IS NOT NULL)
      AND state IN ('claimed', 'running')
      AND concurrency_key IN (SELECT concurrency_key FROM c WHERE concurrency_key IS NOT NULL)
    GROUP BY concurrency_key
)
SELECT c.id, c.queue, c.handler, c.concurrency_key, c.concurrency_limit, c.rate_key,
       c.breaker_key, held.key_running, held.key_limit
FROM c LEFT JOIN held ON held.concurrency_key = c.concurrency_key
ORDER BY c.sort_at, c.id;

-- name: claim_ids
-- The chosen runs, and in the same call the rate log's rows for their starts: parallel
-- arrays, one row per bucket (every start of a claim shares its instant), empty when no
-- rate applies (ADR 0016).
INSERT INTO rota_rate_starts (scope, name, rate_key, leaves_at, starts)
SELECT s.value, n.value, k.value, l.value, c.value
FROM json_each(:rate_scope) AS s
JOIN json_each(:rate_name) AS n ON n.key = s.key
JOIN json_each(:rate_key) AS k ON k.key = s.key
JOIN json_each(:rate_leaves_at) AS l ON l.key = s.key
JOIN json_each(:rate_starts) AS c ON c.key = s.key;
UPDATE rota_runs_live
SET state = 'claimed',
    attempt = attempt + 1,
    fence = fence + 1,
    worker_id = :worker_id,
    started_at = :now,
    lease_expires_at = :now + :lease_seconds
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('pending', 'retrying')
RETURNING id, handler, payload, queue, attempt, max_attempts, fence, timeout_seconds,
          lost_count, idempotency_key, lease_expires_at, correlation_id, job_id,
          :now - run_at AS pickup_delay, trace_context, step_input, slot_at;

-- name: breaker_fail_fast
-- Runs whose breaker is open and whose handler fails fast (ADR 0016): Failed at once,
-- no attempt made or counted, the reason in error; run.failed enters the webhook outbox
-- in the same transaction, as a completion's would.
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.failed', r.id, r.namespace, r.handler, r.queue, 'failed', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.failed,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id IN (SELECT value FROM json_each(:ids)) AND r.state IN ('pending', 'retrying');
UPDATE rota_runs_live
SET state = 'failed', error = :error, finished_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('pending', 'retrying')
RETURNING id;

-- name: overlap_skip
-- Slot runs whose job's overlap policy leaves them out (ADR 0029): Skipped at once, the
-- reason in error, no attempt made; the trigger moves them to history. Only Pending
-- runs: a retry of an earlier run waits for the key instead.
-- run.skipped enters the webhook outbox in this same transaction (ADR 0017).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.skipped', r.id, r.namespace, r.handler, r.queue, 'skipped', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.skipped,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id IN (SELECT value FROM json_each(:ids)) AND r.state = 'pending';
UPDATE rota_runs_live
SET state = 'skipped', error = :error, finished_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'pending'
RETURNING id;
