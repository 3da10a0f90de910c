-- rota schema version 9 (SQLite): rate limits on run starts and circuit breakers (ADR 0016).
-- rota_rates: N starts per period, per queue or handler. rota_rate_starts: the log of
-- recent starts, one row per start with the instant (whole microseconds since the
-- epoch) it leaves its window; the serialised limited claim counts the live rows per
-- bucket, writes one row per start it admits, and deletes rows whose window has passed.

ALTER TABLE rota_runs ADD COLUMN rate_key TEXT;  -- each key of a rate has its own budget

CREATE TABLE rota_rates (
    scope          TEXT NOT NULL CHECK (scope IN ('queue', 'handler')),
    name           TEXT NOT NULL,
    count          INTEGER NOT NULL CHECK (count >= 1),
    period_seconds INTEGER NOT NULL CHECK (period_seconds >= 1),
    PRIMARY KEY (scope, name)
);

CREATE TABLE rota_rate_starts (
    scope     TEXT NOT NULL,
    name      TEXT NOT NULL,
    rate_key  TEXT NOT NULL,
    leaves_at INTEGER NOT NULL
);
CREATE INDEX rota_rate_starts_leaving ON rota_rate_starts (leaves_at);

-- Circuit breakers (ADR 0016): rules declared on handlers (written by every worker at
-- start), one state row per (handler, breaker_key), and every transition with its
-- time and cause. Instants are whole microseconds since the epoch.
ALTER TABLE rota_runs ADD COLUMN breaker_key TEXT;

CREATE TABLE rota_breaker_rules (
    handler           TEXT PRIMARY KEY,
    failures          INTEGER NOT NULL CHECK (failures >= 1),
    window_seconds    REAL NOT NULL CHECK (window_seconds > 0),
    cool_down_seconds REAL NOT NULL CHECK (cool_down_seconds >= 0),
    probes            INTEGER NOT NULL CHECK (probes >= 1)
);

CREATE TABLE rota_breakers (
    handler           TEXT NOT NULL,
    breaker_key       TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
    failures          INTEGER NOT NULL DEFAULT 0,
    streak_started_at INTEGER,
    opened_at         INTEGER,
    probes_left       INTEGER NOT NULL DEFAULT 0,
    cause             TEXT,
    PRIMARY KEY (handler, breaker_key)
);

CREATE TABLE rota_breaker_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    handler     TEXT NOT NULL,
    breaker_key TEXT NOT NULL,
    from_state  TEXT NOT NULL,
    to_state    TEXT NOT NULL,
    at          INTEGER NOT NULL,
    cause       TEXT NOT NULL
);
