-- rota schema: webhooks. Subscriptions, and the outbox of deliveries: one row per
-- (event, subscription), written by the completion and the reaper in the same
-- statement as the state change that causes it, so no event is lost to a crash.
-- event_types is ',run.succeeded,run.failed,' so one LIKE filters it in both dialects.

CREATE TABLE rota_webhook_subscriptions (
    id                          bigserial PRIMARY KEY,
    namespace                   text NOT NULL,
    url                         text NOT NULL,
    event_types                 text NOT NULL,
    handler                     text,
    queue                       text,
    -- The signing secrets ('whsec_' + base64). They must be kept readable to sign; the
    -- previous one keeps signing beside the new one until previous_secret_expires_at.
    secret                      text NOT NULL,
    previous_secret             text,
    previous_secret_expires_at  timestamptz,
    enabled                     boolean NOT NULL DEFAULT true,
    disabled_reason             text,
    disabled_at                 timestamptz,
    consecutive_failures        integer NOT NULL DEFAULT 0,
    created_at                  timestamptz NOT NULL,
    updated_at                  timestamptz NOT NULL
);

CREATE TABLE rota_webhook_deliveries (
    id               bigserial PRIMARY KEY,
    subscription_id  bigint NOT NULL REFERENCES rota_webhook_subscriptions (id)
                     ON DELETE CASCADE,
    event_type       text NOT NULL,
    run_id           bigint NOT NULL,
    namespace        text NOT NULL,
    handler          text NOT NULL,
    queue            text NOT NULL,
    run_state        text NOT NULL,
    attempt          integer NOT NULL,
    occurred_at      timestamptz NOT NULL,
    -- pending -> delivered | abandoned (retries spent, or the subscription disabled);
    -- a manual redelivery puts it back to pending under the same id (webhook-id).
    state            text NOT NULL DEFAULT 'pending',
    tries            integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL,
    lease_expires_at timestamptz,
    last_status      integer,
    last_error       text,
    delivered_at     timestamptz
);
CREATE INDEX rota_webhook_deliveries_due ON rota_webhook_deliveries (next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX rota_webhook_deliveries_by_subscription
    ON rota_webhook_deliveries (subscription_id, id);
