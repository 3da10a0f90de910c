-- Webhooks: subscriptions and the outbox of deliveries (migration *_webhooks.sql).
-- The events themselves are written by `complete` and `reap` (leases.sql), in the same
-- statement as the state change that causes them.

-- name: insert_subscription
INSERT INTO rota_webhook_subscriptions (namespace, url, event_types, handler, queue, secret,
                                        created_at, updated_at)
VALUES (%(namespace)s, %(url)s, %(event_types)s, %(handler)s, %(queue)s, %(secret)s,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()))
RETURNING *;

-- name: get_subscription
SELECT * FROM rota_webhook_subscriptions WHERE id = %(id)s;

-- name: list_subscriptions
SELECT * FROM rota_webhook_subscriptions
WHERE (%(namespaces)b::text[] IS NULL OR namespace = ANY(%(namespaces)b::text[]))
ORDER BY id;

-- name: update_subscription
-- Enabling a subscription again clears why it was disabled and its failure count.
UPDATE rota_webhook_subscriptions
SET url = %(url)s, event_types = %(event_types)s, handler = %(handler)s, queue = %(queue)s,
    enabled = %(enabled)s,
    disabled_reason = CASE WHEN %(enabled)s THEN NULL ELSE COALESCE(disabled_reason, 'disabled by an operator') END,
    disabled_at = CASE WHEN %(enabled)s THEN NULL ELSE COALESCE(disabled_at, t.now) END,
    consecutive_failures = CASE WHEN %(enabled)s AND NOT enabled THEN 0 ELSE consecutive_failures END,
    updated_at = t.now
FROM (SELECT COALESCE(%(now)s::timestamptz, now()) AS now) t
WHERE id = %(id)s
RETURNING rota_webhook_subscriptions.*;

-- name: rotate_secret
-- The previous secret keeps signing beside the new one for grace_seconds.
UPDATE rota_webhook_subscriptions
SET previous_secret = secret, secret = %(secret)s,
    previous_secret_expires_at = t.now + make_interval(secs => %(grace_seconds)s),
    updated_at = t.now
FROM (SELECT COALESCE(%(now)s::timestamptz, now()) AS now) t
WHERE id = %(id)s
RETURNING rota_webhook_subscriptions.*;

-- name: delete_subscription
DELETE FROM rota_webhook_subscriptions WHERE id = %(id)s RETURNING id;

-- name: delivery_due
-- A read first, so an idle deliverer never takes a write lock (SQLite's one writer);
-- a disabled subscription's waiting deliveries are not due.
SELECT 1 AS due FROM rota_webhook_deliveries d
JOIN rota_webhook_subscriptions s ON s.id = d.subscription_id AND s.enabled
WHERE d.state = 'pending' AND d.next_attempt_at <= COALESCE(%(now)s::timestamptz, now())
LIMIT 1;

-- name: claim_deliveries
-- A lease per delivery: any node may deliver, SKIP LOCKED keeps two off the same row,
-- and a deliverer that dies leaves a lease that expires, after which the delivery is
-- sent again under the same id. tries counts claims and fences the result's write.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
due AS (
    SELECT d.id FROM rota_webhook_deliveries d
    JOIN rota_webhook_subscriptions s ON s.id = d.subscription_id, t
    WHERE d.state = 'pending' AND d.next_attempt_at <= t.now
      AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= t.now) AND s.enabled
    ORDER BY d.next_attempt_at, d.id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE rota_webhook_deliveries d
SET tries = d.tries + 1, lease_expires_at = t.now + make_interval(secs => %(lease_seconds)s)
FROM due, t
WHERE d.id = due.id
RETURNING d.*;

-- name: delivery_targets
-- Where and with which secrets the claimed deliveries go (an expired previous secret
-- no longer signs).
SELECT s.id, s.url, s.secret,
       CASE WHEN s.previous_secret_expires_at > COALESCE(%(now)s::timestamptz, now())
            THEN s.previous_secret END AS previous_secret
FROM rota_webhook_subscriptions s
WHERE s.id = ANY(%(ids)b::bigint[]);

-- name: delivery_succeeded
WITH done AS (
    UPDATE rota_webhook_deliveries
    SET state = 'delivered', delivered_at = COALESCE(%(now)s::timestamptz, now()),
        last_status = %(status)s, last_error = NULL, lease_expires_at = NULL
    WHERE id = %(id)s AND tries = %(tries)s AND state = 'pending'
    RETURNING subscription_id
)
UPDATE rota_webhook_subscriptions SET consecutive_failures = 0
WHERE id IN (SELECT subscription_id FROM done)
RETURNING id;

-- name: delivery_failed
-- retry_in NULL: the delivery's tries are spent and it is abandoned.
UPDATE rota_webhook_deliveries
SET state = CASE WHEN %(retry_in)s::double precision IS NULL THEN 'abandoned' ELSE 'pending' END,
    next_attempt_at = COALESCE(%(now)s::timestamptz, now())
                      + make_interval(secs => COALESCE(%(retry_in)s::double precision, 0)),
    last_status = %(status)s, last_error = %(error)s, lease_expires_at = NULL
WHERE id = %(id)s AND tries = %(tries)s AND state = 'pending'
RETURNING subscription_id;

-- name: subscription_failed
UPDATE rota_webhook_subscriptions
SET consecutive_failures = consecutive_failures + 1,
    enabled = enabled AND consecutive_failures + 1 < %(disable_after)s,
    disabled_reason = CASE WHEN enabled AND consecutive_failures + 1 >= %(disable_after)s
                           THEN %(reason)s ELSE disabled_reason END,
    disabled_at = CASE WHEN enabled AND consecutive_failures + 1 >= %(disable_after)s
                       THEN COALESCE(%(now)s::timestamptz, now()) ELSE disabled_at END
WHERE id = %(id)s
RETURNING id, enabled;

-- name: list_deliveries
SELECT * FROM rota_webhook_deliveries
WHERE subscription_id = %(subscription_id)s
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: get_delivery
SELECT * FROM rota_webhook_deliveries WHERE id = %(id)s;

-- name: redeliver
-- Sent again under the same id (webhook-id), with a fresh set of tries.
UPDATE rota_webhook_deliveries
SET state = 'pending', tries = 0, next_attempt_at = COALESCE(%(now)s::timestamptz, now()),
    lease_expires_at = NULL
WHERE id = %(id)s
RETURNING *;

-- name: prune_deliveries
-- The leader's pruning: finished deliveries older than the runs' retention.
DELETE FROM rota_webhook_deliveries
WHERE id IN (SELECT id FROM rota_webhook_deliveries
             WHERE state <> 'pending' AND occurred_at < %(older_than)s
             ORDER BY id LIMIT %(limit)s)
RETURNING id;

-- name: breaker_event
-- breaker.opened and breaker.closed, in the transaction that moved the breaker
-- (store/core/breakers.py), once per transition. A run names namespace and queue: the
-- one whose outcome moved it, or for an operator's reset (run_id NULL) the breaker's
-- latest run. The data document (event_data) is a run event's (Delivery.body) with the
-- breaker added.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at,
                                     event_data)
SELECT s.id, %(event_type)s::text, r.id, r.namespace, r.handler, r.queue, r.state, r.attempt,
       t.now, t.now,
       jsonb_build_object('run_id', r.id, 'namespace', r.namespace, 'handler', r.handler,
                          'queue', r.queue, 'state', r.state, 'attempt', r.attempt,
                          'breaker', jsonb_build_object('key', %(breaker_key)s::text,
                                                        'cause', %(cause)s::text))
FROM t, rota_runs r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace
 AND s.event_types LIKE '%%,' || %(event_type)s::text || ',%%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = COALESCE(%(run_id)s::bigint,
                      (SELECT max(id) FROM rota_runs
                       WHERE handler = %(handler)s::text
                         AND COALESCE(breaker_key, '') = %(breaker_key)s::text));
