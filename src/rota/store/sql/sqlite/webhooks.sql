-- Webhooks: subscriptions and the outbox of deliveries (migration *_webhooks.sql).
-- The events themselves are written by `complete` and `reap` (leases.sql), in the same
-- transaction as the state change that causes them.

-- name: insert_subscription
INSERT INTO rota_webhook_subscriptions (namespace, url, event_types, handler, queue, secret,
                                        created_at, updated_at)
VALUES (:namespace, :url, :event_types, :handler, :queue, :secret, :now, :now)
RETURNING *;

-- name: get_subscription
SELECT * FROM rota_webhook_subscriptions WHERE id = :id;

-- name: list_subscriptions
SELECT * FROM rota_webhook_subscriptions
WHERE (:namespaces IS NULL OR namespace IN (SELECT value FROM json_each(:namespaces)))
ORDER BY id;

-- name: update_subscription
UPDATE rota_webhook_subscriptions
SET url = :url, event_types = :event_types, handler = :handler, queue = :queue,
    enabled = :enabled,
    disabled_reason = CASE WHEN :enabled THEN NULL ELSE COALESCE(disabled_reason, 'disabled by an operator') END,
    disabled_at = CASE WHEN :enabled THEN NULL ELSE COALESCE(disabled_at, :now) END,
    consecutive_failures = CASE WHEN :enabled AND NOT enabled THEN 0 ELSE consecutive_failures END,
    updated_at = :now
WHERE id = :id
RETURNING *;

-- name: rotate_secret
UPDATE rota_webhook_subscriptions
SET previous_secret = secret, secret = :secret,
    previous_secret_expires_at = :now + :grace_seconds, updated_at = :now
WHERE id = :id
RETURNING *;

-- name: delete_subscription
-- The outbox rows go first (PostgreSQL cascades; said here so it never depends on
-- the foreign_keys PRAGMA).
DELETE FROM rota_webhook_deliveries WHERE subscription_id = :id;
DELETE FROM rota_webhook_subscriptions WHERE id = :id RETURNING id;

-- name: delivery_due
-- A read first, so an idle deliverer never takes the writer lock (and a disabled
-- subscription's waiting deliveries are not due).
SELECT 1 AS due FROM rota_webhook_deliveries d
JOIN rota_webhook_subscriptions s ON s.id = d.subscription_id AND s.enabled
WHERE d.state = 'pending' AND d.next_attempt_at <= :now
LIMIT 1;

-- name: claim_deliveries
-- BEGIN IMMEDIATE makes this compare-and-set; see the PostgreSQL twin for the lease.
UPDATE rota_webhook_deliveries
SET tries = tries + 1, lease_expires_at = :now + :lease_seconds
WHERE id IN (
    SELECT d.id FROM rota_webhook_deliveries d
    JOIN rota_webhook_subscriptions s ON s.id = d.subscription_id
    WHERE d.state = 'pending' AND d.next_attempt_at <= :now
      AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= :now) AND s.enabled
    ORDER BY d.next_attempt_at, d.id
    LIMIT :limit)
RETURNING *;

-- name: delivery_targets
SELECT id, url, secret,
       CASE WHEN previous_secret_expires_at > :now THEN previous_secret END AS previous_secret
FROM rota_webhook_subscriptions
WHERE id IN (SELECT value FROM json_each(:ids));

-- name: delivery_succeeded
UPDATE rota_webhook_subscriptions SET consecutive_failures = 0
WHERE id = (SELECT subscription_id FROM rota_webhook_deliveries
            WHERE id = :id AND tries = :tries AND state = 'pending');
UPDATE rota_webhook_deliveries
SET state = 'delivered', delivered_at = :now, last_status = :status, last_error = NULL,
    lease_expires_at = NULL
WHERE id = :id AND tries = :tries AND state = 'pending'
RETURNING subscription_id AS id;

-- name: delivery_failed
UPDATE rota_webhook_deliveries
SET state = CASE WHEN :retry_in IS NULL THEN 'abandoned' ELSE 'pending' END,
    next_attempt_at = :now + COALESCE(:retry_in, 0),
    last_status = :status, last_error = :error, lease_expires_at = NULL
WHERE id = :id AND tries = :tries AND state = 'pending'
RETURNING subscription_id;

-- name: subscription_failed
UPDATE rota_webhook_subscriptions
SET consecutive_failures = consecutive_failures + 1,
    enabled = enabled AND consecutive_failures + 1 < :disable_after,
    disabled_reason = CASE WHEN enabled AND consecutive_failures + 1 >= :disable_after
                           THEN :reason ELSE disabled_reason END,
    disabled_at = CASE WHEN enabled AND consecutive_failures + 1 >= :disable_after
                       THEN :now ELSE disabled_at END
WHERE id = :id
RETURNING id, enabled;

-- name: list_deliveries
SELECT * FROM rota_webhook_deliveries
WHERE subscription_id = :subscription_id AND (:before_id IS NULL OR id < :before_id)
ORDER BY id DESC
LIMIT :limit;

-- name: get_delivery
SELECT * FROM rota_webhook_deliveries WHERE id = :id;

-- name: redeliver
UPDATE rota_webhook_deliveries
SET state = 'pending', tries = 0, next_attempt_at = :now, lease_expires_at = NULL
WHERE id = :id
RETURNING *;

-- name: prune_deliveries
-- The leader's pruning: finished deliveries older than the runs' retention.
DELETE FROM rota_webhook_deliveries
WHERE id IN (SELECT id FROM rota_webhook_deliveries
             WHERE state <> 'pending' AND occurred_at < :older_than
             ORDER BY id LIMIT :limit)
RETURNING id;

-- name: breaker_event
-- breaker.opened and breaker.closed, in the transaction that moved the breaker
-- (store/core/breakers.py), once per transition. A run names namespace and queue: the
-- one whose outcome moved it, or for an operator's reset (run_id NULL) the breaker's
-- latest run. The data document (event_data) is a run event's (Delivery.body) with the
-- breaker added.
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at,
                                     event_data)
SELECT s.id, :event_type, r.id, r.namespace, r.handler, r.queue, r.state, r.attempt,
       :now, :now,
       json_object('run_id', r.id, 'namespace', r.namespace, 'handler', r.handler,
                   'queue', r.queue, 'state', r.state, 'attempt', r.attempt,
                   'breaker', json_object('key', :breaker_key, 'cause', :cause))
FROM rota_runs r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace
 AND s.event_types LIKE '%,' || :event_type || ',%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = COALESCE(:run_id,
                      (SELECT max(id) FROM rota_runs
                       WHERE handler = :handler AND COALESCE(breaker_key, '') = :breaker_key));
