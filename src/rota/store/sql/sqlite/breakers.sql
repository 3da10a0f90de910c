-- Circuit breakers (ADR 0016). Instants are whole microseconds since the epoch.

-- name: breaker_rules
SELECT handler, failures, window_seconds, cool_down_seconds, probes, failure_rate, min_calls,
       when_open
FROM rota_breaker_rules;

-- name: set_breaker_rule
INSERT INTO rota_breaker_rules (handler, failures, window_seconds, cool_down_seconds, probes,
                                failure_rate, min_calls, when_open)
VALUES (:handler, :failures, :window_seconds, :cool_down_seconds, :probes, :failure_rate,
        :min_calls, :when_open)
ON CONFLICT (handler) DO UPDATE
SET failures = excluded.failures, window_seconds = excluded.window_seconds,
    cool_down_seconds = excluded.cool_down_seconds, probes = excluded.probes,
    failure_rate = excluded.failure_rate, min_calls = excluded.min_calls,
    when_open = excluded.when_open;

-- name: breakers
SELECT handler, breaker_key, state, failures, streak_started_at, opened_at, probes_left, cause,
       window_started_at, window_calls, window_failures
FROM rota_breakers ORDER BY handler, breaker_key;

-- name: breakers_tripped
-- Handlers with a breaker open or half-open: their runs need the limited claim.
SELECT DISTINCT handler FROM rota_breakers WHERE state <> 'closed';

-- name: breakers_locked
-- The rows of these handlers, to change in this transaction (the writer lock holds
-- them on SQLite; PostgreSQL locks the rows).
SELECT handler, breaker_key, state, failures, streak_started_at, opened_at, probes_left, cause,
       window_started_at, window_calls, window_failures
FROM rota_breakers WHERE handler IN (SELECT value FROM json_each(:handlers))
ORDER BY handler, breaker_key;

-- name: breaker_ensure
INSERT INTO rota_breakers (handler, breaker_key, state) VALUES (:handler, :breaker_key, 'closed')
ON CONFLICT (handler, breaker_key) DO NOTHING;

-- name: breaker_save
UPDATE rota_breakers
SET state = :state, failures = :failures, streak_started_at = :streak_started_at,
    opened_at = :opened_at, probes_left = :probes_left, cause = :cause,
    window_started_at = :window_started_at, window_calls = :window_calls,
    window_failures = :window_failures
WHERE handler = :handler AND breaker_key = :breaker_key;

-- name: breaker_transition
INSERT INTO rota_breaker_transitions (handler, breaker_key, from_state, to_state, at, cause)
VALUES (:handler, :breaker_key, :from_state, :to_state, :at, :cause);

-- name: breaker_transitions
SELECT handler, breaker_key, from_state, to_state, at AS at_micros, cause
FROM rota_breaker_transitions
ORDER BY id DESC LIMIT :limit;
