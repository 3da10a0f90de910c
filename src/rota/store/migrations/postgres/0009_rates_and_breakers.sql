-- rota schema version 9 (PostgreSQL): rate limits on run starts and circuit breakers (ADR 0016).
-- rota_rates: N starts per period, per queue or handler. rota_rate_starts: the log of
-- recent starts, one row per start with the instant (whole microseconds since the
-- epoch) it leaves its window; the serialised limited claim counts the live rows per
-- bucket, writes one row per start it admits, and deletes rows whose window has passed.

ALTER TABLE rota_runs ADD COLUMN rate_key text;  -- each key of a rate has its own budget

CREATE TABLE rota_rates (
    scope          text NOT NULL CHECK (scope IN ('queue', 'handler')),
    name           text NOT NULL,
    count          integer NOT NULL CHECK (count >= 1),
    period_seconds integer NOT NULL CHECK (period_seconds >= 1),
    PRIMARY KEY (scope, name)
);

CREATE TABLE rota_rate_starts (
    scope     text NOT NULL,
    name      text NOT NULL,
    rate_key  text NOT NULL,
    leaves_at bigint NOT NULL
);
CREATE INDEX rota_rate_starts_leaving ON rota_rate_starts (leaves_at);

-- Circuit breakers (ADR 0016): rules declared on handlers (written by every worker at
-- start), one state row per (handler, breaker_key), and every transition with its
-- time and cause. Instants are whole microseconds since the epoch.
ALTER TABLE rota_runs ADD COLUMN breaker_key text;

CREATE TABLE rota_breaker_rules (
    handler           text PRIMARY KEY,
    failures          integer NOT NULL CHECK (failures >= 1),
    window_seconds    double precision NOT NULL CHECK (window_seconds > 0),
    cool_down_seconds double precision NOT NULL CHECK (cool_down_seconds >= 0),
    probes            integer NOT NULL CHECK (probes >= 1)
);

CREATE TABLE rota_breakers (
    handler           text NOT NULL,
    breaker_key       text NOT NULL,
    state             text NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
    failures          integer NOT NULL DEFAULT 0,
    streak_started_at bigint,
    opened_at         bigint,
    probes_left       integer NOT NULL DEFAULT 0,
    cause             text,
    PRIMARY KEY (handler, breaker_key)
);

CREATE TABLE rota_breaker_transitions (
    id bigserial PRIMARY KEY,
    handler     text NOT NULL,
    breaker_key text NOT NULL,
    from_state  text NOT NULL,
    to_state    text NOT NULL,
    at          bigint NOT NULL,
    cause       text NOT NULL
);
