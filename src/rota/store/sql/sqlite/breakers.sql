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
-- Within namespaces (null: all): the breakers runs of those namespaces moved.
SELECT handler, breaker_key, state, failures, streak_started_at, opened_at, probes_left, cause,
       window_started_at, window_calls, window_failures
FROM rota_breakers b
WHERE (:namespaces IS NULL OR EXISTS (
    SELECT 1 FROM rota_breaker_namespaces n
    WHERE n.handler = b.handler AND n.breaker_key = b.breaker_key
      AND n.namespace IN (SELECT value FROM json_each(:namespaces))))
ORDER BY handler, breaker_key;

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

-- name: breaker_namespaces_record
-- The namespace of a run whose outcome a breaker just judged (once per namespace).
INSERT INTO rota_breaker_namespaces (handler, breaker_key, namespace)
VALUES (:handler, :breaker_key, :namespace)
ON CONFLICT (handler, breaker_key, namespace) DO NOTHING;

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
-- Within namespaces (null: all), as breakers.
SELECT handler, breaker_key, from_state, to_state, at AS at_micros, cause
FROM rota_breaker_transitions t
WHERE (:namespaces IS NULL OR EXISTS (
    SELECT 1 FROM rota_breaker_namespaces n
    WHERE n.handler = t.handler AND n.breaker_key = t.breaker_key
      AND n.namespace IN (SELECT value FROM json_each(:namespaces))))
ORDER BY id DESC LIMIT :limit;
