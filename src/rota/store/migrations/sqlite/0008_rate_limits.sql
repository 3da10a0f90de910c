-- rota schema version 8 (SQLite): rate limits on run starts (ADR 0016).
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
