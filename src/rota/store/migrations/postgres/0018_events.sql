-- rota schema version 18 (PostgreSQL): events and the jobs subscribed to them
-- (DESIGN.md "Events", ADR 0023). An event is unique by (namespace, name, event_id):
-- publishing it again inserts nothing, so its runs are made once, in the transaction
-- that stores it. Events are pruned after the retention period by the leader.

CREATE TABLE rota_events (
    id            bigserial PRIMARY KEY,
    namespace     text NOT NULL,
    name          text NOT NULL,
    event_id      text NOT NULL,
    payload       jsonb NOT NULL,
    published_at  timestamptz NOT NULL,
    runs_created  integer NOT NULL DEFAULT 0,
    UNIQUE (namespace, name, event_id)
);
CREATE INDEX rota_events_published ON rota_events (published_at, id);

CREATE TABLE rota_event_subscriptions (
    id          bigserial PRIMARY KEY,
    namespace   text NOT NULL,
    event_name  text NOT NULL,
    -- Exactly one target: a job (deleted with it) or a workflow, by name.
    job_id      bigint REFERENCES rota_jobs (id) ON DELETE CASCADE,
    workflow    text,
    filter      text NOT NULL DEFAULT '{}',  -- JSON: payload path -> value (equality)
    created_at  timestamptz NOT NULL,
    CHECK ((job_id IS NULL) <> (workflow IS NULL)),
    UNIQUE (namespace, event_name, job_id),
    UNIQUE (namespace, event_name, workflow)
);
CREATE INDEX rota_event_subscriptions_job ON rota_event_subscriptions (job_id);
