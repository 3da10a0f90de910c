-- Events and the jobs subscribed to them (migration *_events.sql). A publish stores
-- the event and makes its subscribers' runs in one transaction (store/core/events.py).

-- name: insert_event
-- A repeated (namespace, name, event_id) inserts nothing and returns no row.
INSERT INTO rota_events (namespace, name, event_id, payload, published_at)
VALUES (:namespace, :name, :event_id, :payload, :now)
ON CONFLICT (namespace, name, event_id) DO NOTHING
RETURNING *;

-- name: event_by_key
SELECT * FROM rota_events
WHERE namespace = :namespace AND name = :name AND event_id = :event_id;

-- name: set_event_runs
UPDATE rota_events SET runs_created = :runs_created WHERE id = :id;

-- name: event_subscribers
-- The subscribed jobs (their columns) and workflows (job columns NULL), with the
-- subscription's id, filter and workflow; paused jobs make no runs.
SELECT s.id AS subscription_id, s.filter, s.workflow, j.*
FROM rota_event_subscriptions s LEFT JOIN rota_jobs j ON j.id = s.job_id
WHERE s.namespace = :namespace AND s.event_name = :name
  AND (s.job_id IS NULL OR NOT j.paused)
ORDER BY s.id;

-- name: list_events
-- Newest first, a keyset page below :before_id.
SELECT * FROM rota_events
WHERE (:namespaces IS NULL OR namespace IN (SELECT value FROM json_each(:namespaces)))
  AND (:namespace IS NULL OR namespace = :namespace)
  AND (:name IS NULL OR name = :name)
  AND (:before_id IS NULL OR id < :before_id)
ORDER BY id DESC
LIMIT :limit;

-- name: prune_events
DELETE FROM rota_events WHERE id IN (
    SELECT id FROM rota_events WHERE published_at < :older_than
    ORDER BY published_at, id LIMIT :limit)
RETURNING id;

-- name: subscribe_job
-- Subscribing again replaces the filter (one subscription per job and event name).
INSERT INTO rota_event_subscriptions (namespace, event_name, job_id, filter, created_at)
VALUES (:namespace, :event_name, :job_id, :filter, :now)
ON CONFLICT (namespace, event_name, job_id) DO UPDATE SET filter = excluded.filter
RETURNING *;

-- name: unsubscribe_job
DELETE FROM rota_event_subscriptions WHERE job_id = :job_id AND event_name = :event_name
RETURNING id;

-- name: subscribe_workflow
INSERT INTO rota_event_subscriptions (namespace, event_name, workflow, filter, created_at)
VALUES (:namespace, :event_name, :workflow, :filter, :now)
ON CONFLICT (namespace, event_name, workflow) DO UPDATE SET filter = excluded.filter
RETURNING *;

-- name: unsubscribe_workflow
DELETE FROM rota_event_subscriptions
WHERE namespace = :namespace AND event_name = :event_name AND workflow = :workflow
RETURNING id;

-- name: list_event_subscriptions
SELECT s.*, j.name AS job_name
FROM rota_event_subscriptions s LEFT JOIN rota_jobs j ON j.id = s.job_id
WHERE (:namespaces IS NULL OR s.namespace IN (SELECT value FROM json_each(:namespaces)))
ORDER BY s.namespace, s.event_name, s.id;
