-- rota schema: webhooks. Subscriptions, and the outbox of deliveries: one row per
-- (event, subscription), written by the completion and the reaper in the same
-- statement as the state change that causes it, so no event is lost to a crash.
-- event_types is ',run.succeeded,run.failed,' so one LIKE filters it in both dialects.

CREATE TABLE rota_webhook_subscriptions (
    id                          INTEGER PRIMARY KEY,
    namespace                   TEXT NOT NULL,
    url                         TEXT NOT NULL,
    event_types                 TEXT NOT NULL,
    handler                     TEXT,
    queue                       TEXT,
    -- The signing secrets ('whsec_' + base64). They must be kept readable to sign; the
    -- previous one keeps signing beside the new one until previous_secret_expires_at.
    secret                      TEXT NOT NULL,
    previous_secret             TEXT,
    previous_secret_expires_at  REAL,
    enabled                     INTEGER NOT NULL DEFAULT 1,
    disabled_reason             TEXT,
    disabled_at                 REAL,
    consecutive_failures        INTEGER NOT NULL DEFAULT 0,
    created_at                  REAL NOT NULL,
    updated_at                  REAL NOT NULL
);

CREATE TABLE rota_webhook_deliveries (
    id               INTEGER PRIMARY KEY,
    subscription_id  INTEGER NOT NULL REFERENCES rota_webhook_subscriptions (id)
                     ON DELETE CASCADE,
    event_type       TEXT NOT NULL,
    run_id           INTEGER NOT NULL,
    namespace        TEXT NOT NULL,
    handler          TEXT NOT NULL,
    queue            TEXT NOT NULL,
    run_state        TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    occurred_at      REAL NOT NULL,
    -- pending -> delivered | abandoned (retries spent, or the subscription disabled);
    -- a manual redelivery puts it back to pending under the same id (webhook-id).
    state            TEXT NOT NULL DEFAULT 'pending',
    tries            INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  REAL NOT NULL,
    lease_expires_at REAL,
    last_status      INTEGER,
    last_error       TEXT,
    delivered_at     REAL
);
CREATE INDEX rota_webhook_deliveries_due ON rota_webhook_deliveries (next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX rota_webhook_deliveries_by_subscription
    ON rota_webhook_deliveries (subscription_id, id);
