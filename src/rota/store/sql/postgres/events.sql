-- Events and the jobs subscribed to them (migration *_events.sql). A publish stores
-- the event and makes its subscribers' runs in one transaction (store/core/events.py).

-- name: insert_event
-- A repeated (namespace, name, event_id) inserts nothing and returns no row (a
-- concurrent publish of the same event waits for the first to commit, then does this).
INSERT INTO rota_events (namespace, name, event_id, payload, published_at)
VALUES (%(namespace)s, %(name)s, %(event_id)s, %(payload)s::jsonb,
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (namespace, name, event_id) DO NOTHING
RETURNING *;

-- name: event_by_key
SELECT * FROM rota_events
WHERE namespace = %(namespace)s AND name = %(name)s AND event_id = %(event_id)s;

-- name: set_event_runs
UPDATE rota_events SET runs_created = %(runs_created)s WHERE id = %(id)s;

-- name: event_subscribers
-- The subscribed jobs (their columns) and workflows (job columns NULL), with the
-- subscription's id, filter and workflow; paused jobs make no runs.
SELECT s.id AS subscription_id, s.filter, s.workflow, j.*
FROM rota_event_subscriptions s LEFT JOIN rota_jobs j ON j.id = s.job_id
WHERE s.namespace = %(namespace)s AND s.event_name = %(name)s
  AND (s.job_id IS NULL OR NOT j.paused)
ORDER BY s.id;

-- name: list_events
-- Newest first, a keyset page below %(before_id)s.
SELECT * FROM rota_events
WHERE (%(namespaces)b::text[] IS NULL OR namespace = ANY(%(namespaces)b::text[]))
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s::text)
  AND (%(name)s::text IS NULL OR name = %(name)s::text)
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: prune_events
DELETE FROM rota_events WHERE id IN (
    SELECT id FROM rota_events WHERE published_at < %(older_than)s
    ORDER BY published_at, id LIMIT %(limit)s)
RETURNING id;

-- name: subscribe_job
-- Subscribing again replaces the filter (one subscription per job and event name).
INSERT INTO rota_event_subscriptions (namespace, event_name, job_id, filter, created_at)
VALUES (%(namespace)s, %(event_name)s, %(job_id)s, %(filter)s,
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (namespace, event_name, job_id) DO UPDATE SET filter = excluded.filter
RETURNING *;

-- name: unsubscribe_job
DELETE FROM rota_event_subscriptions
WHERE job_id = %(job_id)s AND event_name = %(event_name)s
RETURNING id;

-- name: subscribe_workflow
INSERT INTO rota_event_subscriptions (namespace, event_name, workflow, filter, created_at)
VALUES (%(namespace)s, %(event_name)s, %(workflow)s, %(filter)s,
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (namespace, event_name, workflow) DO UPDATE SET filter = excluded.filter
RETURNING *;

-- name: unsubscribe_workflow
DELETE FROM rota_event_subscriptions
WHERE namespace = %(namespace)s AND event_name = %(event_name)s AND workflow = %(workflow)s
RETURNING id;

-- name: list_event_subscriptions
SELECT s.*, j.name AS job_name
FROM rota_event_subscriptions s LEFT JOIN rota_jobs j ON j.id = s.job_id
WHERE (%(namespaces)b::text[] IS NULL OR s.namespace = ANY(%(namespaces)b::text[]))
ORDER BY s.namespace, s.event_name, s.id;
