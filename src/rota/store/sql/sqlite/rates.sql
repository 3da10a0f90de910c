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
-- Forget starts whose window has passed, then: the starts still inside their window
-- per bucket, and when the oldest of them leaves it. One round trip of the claim.
DELETE FROM rota_rate_starts WHERE leaves_at <= :at;
SELECT scope, name, rate_key, sum(starts) AS used, min(leaves_at) AS first_leaves_at
FROM rota_rate_starts WHERE leaves_at > :at
GROUP BY scope, name, rate_key;

-- name: rate_record
-- One row per bucket per claim: every start of a claim shares its instant.
INSERT INTO rota_rate_starts (scope, name, rate_key, leaves_at, starts)
VALUES (:scope, :name, :rate_key, :leaves_at, :starts);
