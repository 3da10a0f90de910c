-- Claiming runs (see ADR 0008 for the limited path).

-- name: anything_due
-- Asked only by a dialect with claims_read_first (SQLite); kept alike here so both
-- dialects answer the same names.
SELECT EXISTS (
           SELECT 1 FROM rota_runs
           WHERE state IN ('pending', 'retrying')
             AND run_at <= COALESCE(%(now)s::timestamptz, now())
             AND queue = ANY(%(queues)b::text[])) AS due,
       EXISTS (
           SELECT 1 FROM rota_runs
           WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
             AND queue = ANY(%(queues)b::text[])
             AND run_at <= COALESCE(%(now)s::timestamptz, now())) AS keyed;

-- name: claim
-- The plain path, for runs no limit applies to: one index range scan per queue
-- (LATERAL), merged by effective priority; SKIP LOCKED lets concurrent claimers pass
-- each other's rows instead of queueing on them. The statement lives in the function
-- rota_claim (migrations 22 and 27) so that it is planned once per session (ADR 0030).
SELECT * FROM rota_claim(%(queues)b::text[], %(limit)s::int, %(worker_id)s::text,
                         %(lease_seconds)s::float8, %(tags)b::text[],
                         %(limited_handlers)b::text[], %(now)s::timestamptz);

-- name: next_due_in
-- Only runs not due yet: one that is due but not ours to take (tags, limits) must not
-- keep an idle worker spinning. A run that fell due since the worker's empty claim
-- looked (looked_ago seconds) counts, as due now: it was in neither answer.
-- keyed_seconds: when the earliest keyed run among them falls due (the claim then asks
-- for keyed work beside the plain claim, not after it: CoreClaim._claim_side_by_side).
SELECT EXTRACT(EPOCH FROM min(run_at) - COALESCE(%(now)s::timestamptz, now())) AS seconds,
       EXTRACT(EPOCH FROM min(run_at) FILTER (WHERE concurrency_key IS NOT NULL)
                          - COALESCE(%(now)s::timestamptz, now())) AS keyed_seconds
FROM rota_runs
WHERE state IN ('pending', 'retrying') AND queue = ANY(%(queues)b::text[])
  AND run_at > COALESCE(%(now)s::timestamptz, now())
               - make_interval(secs => %(looked_ago)s::float8);

-- name: claim_lock
-- Serialises limit-checking claims cluster-wide for this transaction, so two claimers
-- never both take the last slot of a limit. Plain claims do not take it. A holder that
-- stalls (a paused process) must not stall every limited claim: the server ends its
-- session after 5 s idle in this transaction, and waiters give up after 2 s. The two
-- limits are set for this transaction only (set_config's true) in a subquery that
-- OFFSET 0 keeps apart, so they are set before the lock is asked for. The dialect sends
-- BEGIN, this and the body's first statement in one round trip (in_serialised).
SELECT pg_advisory_xact_lock(7307916210) AS locked
FROM (SELECT set_config('idle_in_transaction_session_timeout', '5s', true),
             set_config('lock_timeout', '2s', true)
      OFFSET 0) AS limits;

-- name: has_keyed_work
SELECT EXISTS (
    SELECT 1 FROM rota_runs
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
      AND queue = ANY(%(queues)b::text[])
      AND run_at <= COALESCE(%(now)s::timestamptz, now())) AS keyed;

-- name: active_groups
SELECT queue, handler, concurrency_key, min(concurrency_limit) AS key_limit, count(*) AS count
FROM rota_runs
WHERE state IN ('claimed', 'running')
GROUP BY queue, handler, concurrency_key;

-- name: limited_candidates
-- Runs some limit applies to (every due run when everything is set: the plain claim was
-- skipped, see ADR 0016), per queue in priority order, skipping groups already full.
-- No row locks: claimers of these runs are serialised by claim_lock. With key_counts,
-- each keyed row also carries what runs now of its key (count and smallest limit, read
-- through rota_runs_active_groups for the keys in the window only): when no queue,
-- handler or global limit is set, keys are all that count, and this replaces a GROUP
-- BY over every held run.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
c AS (
    -- Unkeyed and keyed runs apart, each a range scan of its own partial index that
    -- stops after a window of matches: one scan with neither condition read every due
    -- run and sorted them, under the lock, on every limited claim.
    SELECT c.id, c.queue, c.handler, c.concurrency_key, c.concurrency_limit, c.rate_key,
           c.breaker_key, c.sort_at
    FROM t,
    -- A paused queue gives nothing (ADR 0035), read in this statement, as in rota_claim.
    (SELECT u.name FROM unnest(%(queues)b::text[]) AS u(name)
     WHERE NOT EXISTS (SELECT 1 FROM rota_queues p WHERE p.name = u.name AND p.paused)) AS q,
    LATERAL (
        (SELECT id, queue, handler, concurrency_key, concurrency_limit, rate_key,
                breaker_key, sort_at
         FROM rota_runs
         WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL
           AND queue = q.name AND run_at <= t.now
           AND (handler = ANY(%(limited_handlers)b::text[])
                OR q.name = ANY(%(limited_queues)b::text[]) OR %(global_limit)s
                OR %(everything)s)
           AND handler <> ALL(%(full_handlers)b::text[])
           AND id <> ALL(%(chosen)b::bigint[])
           AND (tags IS NULL OR tags <@ %(tags)b::text[])
           AND (deadline IS NULL OR deadline >= t.now OR attempt > 0)
         ORDER BY sort_at, id
         LIMIT %(window)s)
        UNION ALL
        (SELECT id, queue, handler, concurrency_key, concurrency_limit, rate_key,
                breaker_key, sort_at
         FROM rota_runs
         WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
           AND queue = q.name AND run_at <= t.now
           AND concurrency_key <> ALL(%(full_keys)b::text[])
           AND handler <> ALL(%(full_handlers)b::text[])
           AND id <> ALL(%(chosen)b::bigint[])
           AND (tags IS NULL OR tags <@ %(tags)b::text[])
           AND (deadline IS NULL OR deadline >= t.now OR attempt > 0)
         ORDER BY sort_at, id
         LIMIT %(window)s)
    ) AS c
    ORDER BY c.sort_at, c.id
    LIMIT %(window)s
),
held AS (
    SELECT concurrency_key, count(*) AS key_running, min(concurrency_limit) AS key_limit
    FROM rota_runs
    -- The EXISTS is one test per statement: a window without keyed runs (a rated
    -- drain) reads no held run at all.
    WHERE %(key_counts)s AND EXISTS (SELECT 1 FROM c WHERE concurrency_key IS NOT NULL)
      AND state IN ('claimed', 'running')
      AND concurrency_key IN (SELECT concurrency_key FROM c WHERE concurrency_key IS NOT NULL)
    GROUP BY concurrency_key
)
SELECT c.id, c.queue, c.handler, c.concurrency_key, c.concurrency_limit, c.rate_key,
       c.breaker_key, held.key_running, held.key_limit
FROM c LEFT JOIN held ON held.concurrency_key = c.concurrency_key
ORDER BY c.sort_at, c.id;

-- name: claim_ids
-- The chosen runs, and in the same statement the rate log's rows for their starts:
-- parallel arrays, one row per bucket (every start of a claim shares its instant),
-- empty when no rate applies (ADR 0016).
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
recorded AS (
    INSERT INTO rota_rate_starts (scope, name, rate_key, leaves_at, starts)
    SELECT * FROM unnest(%(rate_scope)b::text[], %(rate_name)b::text[],
                         %(rate_key)b::text[], %(rate_leaves_at)b::bigint[],
                         %(rate_starts)b::integer[])
)
UPDATE rota_runs r
SET state = 'claimed',
    attempt = r.attempt + 1,
    fence = r.fence + 1,
    worker_id = %(worker_id)s,
    started_at = t.now,
    lease_expires_at = t.now + make_interval(secs => %(lease_seconds)s)
FROM t
WHERE r.id = ANY(%(ids)b::bigint[]) AND r.state IN ('pending', 'retrying')
RETURNING r.id, r.handler, r.payload, r.queue, r.attempt, r.max_attempts, r.fence,
          r.timeout_seconds, r.lost_count, r.idempotency_key, r.lease_expires_at,
          r.correlation_id, r.job_id,
          EXTRACT(EPOCH FROM t.now - r.run_at)::float8 AS pickup_delay, r.trace_context,
          r.step_input, r.slot_at;

-- name: breaker_fail_fast
-- Runs whose breaker is open and whose handler fails fast (ADR 0016): Failed at once,
-- no attempt made or counted, the reason in error; run.failed enters the webhook outbox
-- in the same statement, as a completion's would.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
failed AS (
    UPDATE rota_runs r
    SET state = 'failed', error = %(error)s, finished_at = t.now
    FROM t
    WHERE r.id = ANY(%(ids)b::bigint[]) AND r.state IN ('pending', 'retrying')
    RETURNING r.id, r.namespace, r.handler, r.queue, r.attempt
),
events AS (
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.failed', f.id, f.namespace, f.handler, f.queue, 'failed', f.attempt,
           t.now, t.now
    FROM t, failed f
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = f.namespace AND s.event_types LIKE '%%,run.failed,%%'
     AND (s.handler IS NULL OR s.handler = f.handler) AND (s.queue IS NULL OR s.queue = f.queue)
)
SELECT id FROM failed;

-- name: overlap_skip
-- Slot runs whose job's overlap policy leaves them out (ADR 0029): Skipped at once, the
-- reason in error, no attempt made; the partition key moves them to history. Only
-- Pending runs: a retry of an earlier run waits for the key instead.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
skipped AS (
    UPDATE rota_runs r
    SET state = 'skipped', error = %(error)s, finished_at = t.now
    FROM t
    WHERE r.id = ANY(%(ids)b::bigint[]) AND r.state = 'pending'
    RETURNING r.id, r.namespace, r.handler, r.queue, r.attempt
),
events AS (
    -- run.skipped enters the webhook outbox in this same statement (ADR 0017).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.skipped', d.id, d.namespace, d.handler, d.queue, 'skipped', d.attempt,
           t.now, t.now
    FROM t, skipped d
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = d.namespace AND s.event_types LIKE '%%,run.skipped,%%'
     AND (s.handler IS NULL OR s.handler = d.handler) AND (s.queue IS NULL OR s.queue = d.queue)
)
SELECT id FROM skipped;
