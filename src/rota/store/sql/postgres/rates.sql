-- Rate limits on run starts (ADR 0016). Instants in rota_rate_starts are whole
-- microseconds since the epoch (at), computed once per claim from now.

-- name: rates
SELECT scope, name, count, period_seconds FROM rota_rates;

-- name: set_rate
INSERT INTO rota_rates (scope, name, count, period_seconds)
VALUES (%(scope)s, %(name)s, %(count)s, %(period_seconds)s)
ON CONFLICT (scope, name) DO UPDATE
SET count = EXCLUDED.count, period_seconds = EXCLUDED.period_seconds;

-- name: clear_rate
DELETE FROM rota_rates WHERE scope = %(scope)s AND name = %(name)s RETURNING name;

-- name: claim_now
-- The instant the claim in this transaction records as started_at (now() is the
-- transaction's start, the same in every statement of it).
SELECT COALESCE(%(now)s::timestamptz, now()) AS now;

-- name: rate_usage
-- The claim's instant (the one claim_ids records as started_at) in whole microseconds,
-- and the starts still inside their window per bucket with when the oldest of them
-- leaves it; starts whose window passed a minute ago are forgotten on the way (a
-- data-modifying WITH runs whether or not it is read). One round trip of the claim: always one row
-- with the instant, bucket columns NULL when no start is live. EXTRACT gives an exact
-- numeric, so at_micros is the instant micros() makes of started_at.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
claim AS (SELECT (EXTRACT(EPOCH FROM t.now) * 1000000)::bigint AS at_micros FROM t),
-- A start is forgotten only a minute after its window passed: the claim's instant is
-- its transaction's start, before it waited (up to lock_timeout) for the limits lock, so
-- a claim may come after one with a later instant and must still count the starts
-- inside its own window (ADR 0016, addendum of 2026-12-06 on the claim's instant).
gone AS (DELETE FROM rota_rate_starts
         WHERE leaves_at <= (SELECT at_micros FROM claim) - 60000000),
live AS (
    SELECT scope, name, rate_key, sum(starts) AS used, min(leaves_at) AS first_leaves_at
    FROM rota_rate_starts WHERE leaves_at > (SELECT at_micros FROM claim)
    GROUP BY scope, name, rate_key
)
SELECT claim.at_micros, live.scope, live.name, live.rate_key, live.used, live.first_leaves_at
FROM claim LEFT JOIN live ON true;
