-- rota schema version 13 (PostgreSQL): circuit breakers that open on a failure rate,
-- fail fast while open, and announce opening to webhooks (ADR 0016, ADR 0017).

-- A rule may open on a failure rate only, so failures becomes optional.
ALTER TABLE rota_breaker_rules ALTER COLUMN failures DROP NOT NULL;
ALTER TABLE rota_breaker_rules
    ADD COLUMN failure_rate double precision CHECK (failure_rate > 0 AND failure_rate <= 1),
    ADD COLUMN min_calls integer NOT NULL DEFAULT 20 CHECK (min_calls >= 1),
    ADD COLUMN when_open text NOT NULL DEFAULT 'wait' CHECK (when_open IN ('wait', 'fail'));

-- The failure-rate window of a closed breaker: when it started, outcomes and failures.
ALTER TABLE rota_breakers
    ADD COLUMN window_started_at bigint,
    ADD COLUMN window_calls integer NOT NULL DEFAULT 0,
    ADD COLUMN window_failures integer NOT NULL DEFAULT 0;

