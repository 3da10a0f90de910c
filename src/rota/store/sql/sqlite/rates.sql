-- Rate limits on run starts (ADR 0016). Instants in rota_rate_starts are whole
-- microseconds since the epoch (:at), computed once per claim from :now.

-- name: rates
SELECT scope, name, count, period_seconds FROM rota_rates;

-- name: set_rate
INSERT INTO rota_rates (scope, name, count, period_seconds)
VALUES (:scope, :name, :count, :period_seconds)
ON CONFLICT (scope, name) DO UPDATE
SET count = excluded.count, period_seconds = excluded.period_seconds;

-- name: clear_rate
DELETE FROM rota_rates WHERE scope = :scope AND name = :name RETURNING name;

-- name: claim_now
-- The instant the claim in this transaction records as started_at.
SELECT :now AS now;

-- name: rate_usage
-- The claim's instant in whole microseconds (CAST truncates as micros() floors: the same
-- double times the same integer), and: forget starts whose window passed a minute ago,
-- then the starts still inside their window per bucket with when the oldest of them
-- leaves it.
-- One round trip of the claim: always one row with the instant, bucket columns NULL
-- when no start is live. A start is forgotten only a minute after its window passed:
-- the database's instant is read under the write lock, but an injected one (a clock
-- handed to the store) is taken before it, so a claim may come after one with a later
-- instant and must still count the starts inside its own window (ADR 0016, addendum
-- of 2026-12-06 on the claim's instant).
DELETE FROM rota_rate_starts WHERE leaves_at <= CAST(:now * 1000000 AS INTEGER) - 60000000;
SELECT claim.at_micros, live.scope, live.name, live.rate_key, live.used, live.first_leaves_at
FROM (SELECT CAST(:now * 1000000 AS INTEGER) AS at_micros) AS claim
LEFT JOIN (
    SELECT scope, name, rate_key, sum(starts) AS used, min(leaves_at) AS first_leaves_at
    FROM rota_rate_starts WHERE leaves_at > CAST(:now * 1000000 AS INTEGER)
    GROUP BY scope, name, rate_key
) AS live ON 1;
