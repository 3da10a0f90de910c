-- rota schema version 27 (PostgreSQL): a paused queue is skipped by the claim statement
-- itself (issue 29, ADR 0035). Each worker process used to learn of a pause from its
-- cached copy of the paused set, read at most once a second, so a pause took up to a
-- second plus a claim to hold. The plain claim (rota_claim, from migration 22, replaced
-- here with only its queue list changed) and the limited claim's candidates now leave
-- out a queue whose rota_queues row says paused, so a claim that starts after the
-- pause commits takes nothing from it. The cached set still trims the queue list
-- before any statement is sent (and keeps an idle worker from waking for a paused
-- queue's runs).
CREATE OR REPLACE FUNCTION rota_claim(
    claim_queues text[], claim_limit int, claim_worker text, claim_lease float8,
    claim_tags text[], claim_held_handlers text[], claim_at timestamptz
) RETURNS TABLE (
    id bigint, handler text, payload jsonb, queue text, attempt int, max_attempts int,
    fence bigint, timeout_seconds float8, lost_count int, idempotency_key text,
    lease_expires_at timestamptz, correlation_id text, job_id bigint,
    pickup_delay float8, trace_context text, step_input jsonb, slot_at timestamptz
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_sort = off
SET jit = off
AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH t AS (SELECT COALESCE(claim_at, now()) AS now),
    picked AS (
        SELECT c.ctid FROM t,
        -- The claim's queues but a paused one (ADR 0035), read in this statement: a
        -- pause holds from the next claim on every worker. One look per queue at a
        -- table with a row only for a queue an operator has acted on.
        (SELECT u.name FROM unnest(claim_queues) AS u(name)
         WHERE NOT EXISTS (SELECT 1 FROM rota_queues p WHERE p.name = u.name AND p.paused))
        AS q,
        LATERAL (
            SELECT l.ctid, l.id, l.sort_at FROM rota_runs_live l
            WHERE l.state IN ('pending', 'retrying') AND l.concurrency_key IS NULL
              AND l.queue = q.name AND l.run_at <= t.now
              AND l.handler <> ALL(claim_held_handlers)
              AND (l.tags IS NULL OR l.tags <@ claim_tags)
              -- A run whose breaker is open or half-open waits for the limited path
              -- (ADR 0016). Each row is checked only while some breaker is not closed:
              -- the first test is one look per statement, and the common case stops there.
              AND (NOT (SELECT EXISTS (SELECT 1 FROM rota_breakers o WHERE o.state <> 'closed'))
                   OR NOT EXISTS (
                       SELECT 1 FROM rota_breakers b
                       WHERE b.handler = l.handler
                         AND b.breaker_key = COALESCE(l.breaker_key, '')
                         AND b.state <> 'closed'))
              AND (l.deadline IS NULL OR l.deadline >= t.now OR l.attempt > 0)
            ORDER BY l.sort_at, l.id
            LIMIT claim_limit
            FOR UPDATE SKIP LOCKED
        ) AS c
        ORDER BY c.sort_at, c.id
        LIMIT claim_limit
    )
    UPDATE rota_runs_live r
    SET state = 'claimed',
        attempt = r.attempt + 1,
        fence = r.fence + 1,
        worker_id = claim_worker,
        started_at = t.now,
        lease_expires_at = t.now + make_interval(secs => claim_lease)
    FROM t
    -- By the rows' own addresses: a TID scan, never a plan that depends on an
    -- estimate. picked locked them while they were pending or retrying, so neither
    -- their place nor their state can have changed since (and a test of the state here
    -- would let the planner reach for the partial indexes instead).
    WHERE r.ctid = ANY(ARRAY(SELECT picked.ctid FROM picked))
    RETURNING r.id, r.handler, r.payload, r.queue, r.attempt, r.max_attempts, r.fence,
              r.timeout_seconds, r.lost_count, r.idempotency_key, r.lease_expires_at,
              r.correlation_id, r.job_id,
              EXTRACT(EPOCH FROM t.now - r.run_at)::float8, r.trace_context, r.step_input,
              r.slot_at;
END
$claim$;
