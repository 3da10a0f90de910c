-- Circuit breakers (ADR 0016). Instants are whole microseconds since the epoch.

-- name: breaker_rules
SELECT handler, failures, window_seconds, cool_down_seconds, probes, failure_rate, min_calls,
       when_open
FROM rota_breaker_rules;

-- name: set_breaker_rule
INSERT INTO rota_breaker_rules (handler, failures, window_seconds, cool_down_seconds, probes,
                                failure_rate, min_calls, when_open)
VALUES (%(handler)s, %(failures)s, %(window_seconds)s, %(cool_down_seconds)s, %(probes)s,
        %(failure_rate)s, %(min_calls)s, %(when_open)s)
ON CONFLICT (handler) DO UPDATE
SET failures = EXCLUDED.failures, window_seconds = EXCLUDED.window_seconds,
    cool_down_seconds = EXCLUDED.cool_down_seconds, probes = EXCLUDED.probes,
    failure_rate = EXCLUDED.failure_rate, min_calls = EXCLUDED.min_calls,
    when_open = EXCLUDED.when_open;

-- name: breakers
-- Within namespaces (null: all): the breakers runs of those namespaces moved.
SELECT handler, breaker_key, state, failures, streak_started_at, opened_at, probes_left, cause,
       window_started_at, window_calls, window_failures
FROM rota_breakers b
WHERE (%(namespaces)b::text[] IS NULL OR EXISTS (
    SELECT 1 FROM rota_breaker_namespaces n
    WHERE n.handler = b.handler AND n.breaker_key = b.breaker_key
      AND n.namespace = ANY(%(namespaces)b::text[])))
ORDER BY handler, breaker_key;

-- name: breakers_tripped
-- Handlers with a breaker open or half-open: their runs need the limited claim.
SELECT DISTINCT handler FROM rota_breakers WHERE state <> 'closed';

-- name: breakers_locked
-- The rows of these handlers, locked (in key order) to change in this transaction.
SELECT handler, breaker_key, state, failures, streak_started_at, opened_at, probes_left, cause,
       window_started_at, window_calls, window_failures
FROM rota_breakers WHERE handler = ANY(%(handlers)b::text[])
ORDER BY handler, breaker_key
FOR UPDATE;

-- name: breaker_ensure
-- Rows come as parallel arrays.
INSERT INTO rota_breakers (handler, breaker_key, state)
SELECT h, k, 'closed' FROM unnest(%(handler)b::text[], %(breaker_key)b::text[]) AS i(h, k)
ORDER BY h, k
ON CONFLICT (handler, breaker_key) DO NOTHING;

-- name: breaker_namespaces_record
-- The namespace of a run whose outcome a breaker just judged (once per namespace).
-- Rows come as parallel arrays.
INSERT INTO rota_breaker_namespaces (handler, breaker_key, namespace)
SELECT h, k, n FROM unnest(%(handler)b::text[], %(breaker_key)b::text[], %(namespace)b::text[])
    AS i(h, k, n)
ORDER BY h, k, n
ON CONFLICT (handler, breaker_key, namespace) DO NOTHING;

-- name: breaker_save
UPDATE rota_breakers b
SET state = i.state, failures = i.failures, streak_started_at = i.streak_started_at,
    opened_at = i.opened_at, probes_left = i.probes_left, cause = i.cause,
    window_started_at = i.window_started_at, window_calls = i.window_calls,
    window_failures = i.window_failures
FROM unnest(%(handler)b::text[], %(breaker_key)b::text[], %(state)b::text[],
            %(failures)b::integer[], %(streak_started_at)b::bigint[], %(opened_at)b::bigint[],
            %(probes_left)b::integer[], %(cause)b::text[], %(window_started_at)b::bigint[],
            %(window_calls)b::integer[], %(window_failures)b::integer[])
     AS i(handler, breaker_key, state, failures, streak_started_at, opened_at, probes_left,
          cause, window_started_at, window_calls, window_failures)
WHERE b.handler = i.handler AND b.breaker_key = i.breaker_key;

-- name: breaker_transition
INSERT INTO rota_breaker_transitions (handler, breaker_key, from_state, to_state, at, cause)
SELECT * FROM unnest(%(handler)b::text[], %(breaker_key)b::text[], %(from_state)b::text[],
                     %(to_state)b::text[], %(at)b::bigint[], %(cause)b::text[]);

-- name: breaker_transitions
-- Within namespaces (null: all), as breakers.
SELECT handler, breaker_key, from_state, to_state, at AS at_micros, cause
FROM rota_breaker_transitions t
WHERE (%(namespaces)b::text[] IS NULL OR EXISTS (
    SELECT 1 FROM rota_breaker_namespaces n
    WHERE n.handler = t.handler AND n.breaker_key = t.breaker_key
      AND n.namespace = ANY(%(namespaces)b::text[])))
ORDER BY id DESC LIMIT %(limit)s;
