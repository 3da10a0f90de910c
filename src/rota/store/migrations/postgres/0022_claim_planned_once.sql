-- rota schema version 22 (PostgreSQL): the plain claim is planned once per session
-- (ADR 0030).
-- Planning the claim statement cost more server CPU than running it (about 0.5 ms
-- against 0.3 ms for ten runs): every claim was planned anew for its parameters, and
-- PostgreSQL's plan cache never switched to a generic plan because a plan for an
-- unknown LIMIT always looks dearer than one for LIMIT 10. The claim is now a function
-- whose statement keeps one generic plan per session.
--
-- A plan kept for the whole session must not depend on the statistics of the moment
-- (an empty queue at start-up would fix a plan that sorts every due run): seq scans
-- and sorts are priced out inside the function, so the plan is always the one the
-- claim is designed for, a walk of rota_runs_claimable in (sort_at, id) order per
-- queue, stopping at the limit, and the update finds the locked rows by address.
-- With no other plan left to choose, no filter's estimate (the handlers a limit holds
-- back, the worker's tags) can pick a worse one. JIT is off: the prices that rule the
-- other plans out would otherwise make the claim look dear enough to compile (half a
-- second per claim, seen in the contract suite).
CREATE FUNCTION rota_claim(
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
        SELECT c.ctid FROM unnest(claim_queues) AS q(name), t,
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
