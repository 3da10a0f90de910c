-- rota schema version 13 (SQLite): circuit breakers that open on a failure rate, fail
-- fast while open, and announce opening to webhooks (ADR 0016, ADR 0017).

-- A rule may open on a failure rate only, so failures becomes optional. SQLite cannot
-- drop NOT NULL: the rules table (one small row per handler, rewritten by every
-- worker at start) is copied into its new shape.
CREATE TABLE rota_breaker_rules_new (
    handler           TEXT PRIMARY KEY,
    failures          INTEGER CHECK (failures >= 1),
    window_seconds    REAL NOT NULL CHECK (window_seconds > 0),
    cool_down_seconds REAL NOT NULL CHECK (cool_down_seconds >= 0),
    probes            INTEGER NOT NULL CHECK (probes >= 1),
    failure_rate      REAL CHECK (failure_rate > 0 AND failure_rate <= 1),
    min_calls         INTEGER NOT NULL DEFAULT 20 CHECK (min_calls >= 1),
    when_open         TEXT NOT NULL DEFAULT 'wait' CHECK (when_open IN ('wait', 'fail'))
);
INSERT INTO rota_breaker_rules_new (handler, failures, window_seconds, cool_down_seconds, probes)
SELECT handler, failures, window_seconds, cool_down_seconds, probes FROM rota_breaker_rules;
DROP TABLE rota_breaker_rules;
ALTER TABLE rota_breaker_rules_new RENAME TO rota_breaker_rules;

-- The failure-rate window of a closed breaker: when it started, outcomes and failures.
ALTER TABLE rota_breakers ADD COLUMN window_started_at INTEGER;
ALTER TABLE rota_breakers ADD COLUMN window_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_breakers ADD COLUMN window_failures INTEGER NOT NULL DEFAULT 0;

