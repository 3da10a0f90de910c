-- rota schema version 18 (SQLite): events and the jobs subscribed to them
-- (DESIGN.md "Events", ADR 0023).
-- An event is unique by (namespace, name, event_id): publishing it again inserts
-- nothing, so its runs are made once, in the transaction that stores it. Events are
-- pruned after the retention period by the leader.

CREATE TABLE rota_events (
    id            INTEGER PRIMARY KEY,
    namespace     TEXT NOT NULL,
    name          TEXT NOT NULL,
    event_id      TEXT NOT NULL,
    payload       TEXT NOT NULL,
    published_at  REAL NOT NULL,
    runs_created  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (namespace, name, event_id)
);
CREATE INDEX rota_events_published ON rota_events (published_at, id);

CREATE TABLE rota_event_subscriptions (
    id          INTEGER PRIMARY KEY,
    namespace   TEXT NOT NULL,
    event_name  TEXT NOT NULL,
    -- Exactly one target: a job (deleted with it) or a workflow, by name.
    job_id      INTEGER REFERENCES rota_jobs (id) ON DELETE CASCADE,
    workflow    TEXT,
    filter      TEXT NOT NULL DEFAULT '{}',  -- JSON: payload path -> value (equality)
    created_at  REAL NOT NULL,
    CHECK ((job_id IS NULL) <> (workflow IS NULL)),
    UNIQUE (namespace, event_name, job_id),
    UNIQUE (namespace, event_name, workflow)
);
CREATE INDEX rota_event_subscriptions_job ON rota_event_subscriptions (job_id);
