-- rota schema version 8 (PostgreSQL): rate limits on run starts (ADR 0016).
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
