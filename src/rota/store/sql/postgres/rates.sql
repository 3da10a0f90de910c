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
-- Forget starts whose window has passed (a data-modifying WITH runs whether or not it
-- is read), and: the starts still inside their window per bucket, and when the oldest
-- of them leaves it. One round trip of the claim.
WITH gone AS (DELETE FROM rota_rate_starts WHERE leaves_at <= %(at)s)
SELECT scope, name, rate_key, sum(starts) AS used, min(leaves_at) AS first_leaves_at
FROM rota_rate_starts WHERE leaves_at > %(at)s
GROUP BY scope, name, rate_key;

-- name: rate_record
-- Rows come as parallel arrays; one per bucket per claim (every start of a claim
-- shares its instant).
INSERT INTO rota_rate_starts (scope, name, rate_key, leaves_at, starts)
SELECT * FROM unnest(%(scope)s::text[], %(name)s::text[], %(rate_key)s::text[],
                     %(leaves_at)s::bigint[], %(starts)s::integer[]);
