-- Workflows: starting a workflow run, releasing, skipping and settling its steps in
-- the transaction that finished a parent, cancelling and replaying (DESIGN.md
-- "Workflows"). Steps are runs in rota_runs tagged with workflow_run_id and
-- step_name; a map's items also carry map_index, and the map's own row counts its
-- unfinished items in open_items.

-- name: insert_workflow_run
-- A repeated idempotency key inserts nothing (workflow_run_by_key finds the first).
INSERT INTO rota_workflow_runs (namespace, name, definition, payload, created_at,
                                idempotency_key)
VALUES (%(namespace)s, %(name)s, %(definition)s::jsonb, %(payload)s::jsonb,
        COALESCE(%(now)s::timestamptz, now()), %(idempotency_key)s)
ON CONFLICT (namespace, name, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING id;

-- name: workflow_run_by_key
SELECT id FROM rota_workflow_runs
WHERE namespace = %(namespace)s AND name = %(name)s
  AND idempotency_key = %(idempotency_key)s;

-- name: insert_steps
-- A step's idempotency key is kept as a run's is (runs.sql insert_runs).
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
r AS MATERIALIZED (
    SELECT nextval('rota_run_id_seq') AS id, r.*
    FROM unnest(%(namespace)b::text[], %(handler)b::text[], %(queue)b::text[],
                %(payload)b::text[], %(priority)b::smallint[], %(max_attempts)b::integer[],
                %(timeout_seconds)b::double precision[], %(idempotency_key)b::text[],
                %(replay_of)b::bigint[], %(tags)b::text[], %(trace_context)b::text[],
                %(state)b::text[], %(workflow_run_id)b::bigint[], %(step_name)b::text[],
                %(map_index)b::integer[], %(step_input)b::text[])
         AS r(namespace, handler, queue, payload, priority, max_attempts, timeout_seconds,
              idempotency_key, replay_of, tags, trace_context, state, workflow_run_id,
              step_name, map_index, step_input)
),
keyed AS (
    INSERT INTO rota_idempotency_keys (namespace, handler, idempotency_key, run_id)
    SELECT namespace, handler, idempotency_key, id FROM r WHERE idempotency_key IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING run_id
)
INSERT INTO rota_runs (id, namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, idempotency_key, replay_of, tags,
                       trace_context, created_at, state, workflow_run_id, step_name,
                       map_index, step_input)
SELECT r.id, r.namespace, r.handler, r.queue, r.payload::jsonb, r.priority, t.now,
       t.now - make_interval(secs => r.priority * %(aging_seconds)s),
       r.max_attempts, r.timeout_seconds, r.idempotency_key, r.replay_of,
       NULLIF(r.tags::text[], '{}'), r.trace_context, t.now, r.state, r.workflow_run_id,
       r.step_name, r.map_index, r.step_input::jsonb
FROM r, t
WHERE r.idempotency_key IS NULL OR r.id IN (SELECT run_id FROM keyed)
ORDER BY r.id
RETURNING id;

-- name: lock_workflow_run
-- Releases of one workflow run take turns: two items of a map finishing at once must
-- not each see the other unfinished (READ COMMITTED reads afresh after the lock).
SELECT id, name, definition, payload, cancelled_at FROM rota_workflow_runs
WHERE id = %(id)s
FOR UPDATE;

-- name: workflow_steps_of
SELECT id, workflow_run_id, step_name, map_index, state, step_input FROM rota_runs
WHERE id = ANY(%(ids)b::bigint[]) AND workflow_run_id IS NOT NULL;

-- name: step_rows
-- Each step's own rows (not a map's items), oldest first: the last one per name is
-- the step's current run (a replay adds a row). Naming the steps lets the index
-- seek each one instead of reading past a big map's items.
SELECT id, step_name, state, result, open_items FROM rota_runs
WHERE workflow_run_id = %(workflow_run_id)s AND map_index IS NULL
  AND step_name = ANY(%(names)b::text[])
ORDER BY id;

-- name: map_item_rows
SELECT id, map_index, state, result FROM rota_runs
WHERE workflow_run_id = %(workflow_run_id)s AND step_name = %(step_name)s
  AND map_index IS NOT NULL
ORDER BY map_index, id;

-- name: release_step
UPDATE rota_runs
SET state = 'pending', step_input = %(step_input)s::jsonb,
    -- sort_at keeps the lead over run_at its priority gave it at insert.
    run_at = COALESCE(%(now)s::timestamptz, now()),
    sort_at = COALESCE(%(now)s::timestamptz, now()) - (run_at - sort_at)
WHERE id = %(id)s AND state = 'waiting'
RETURNING id;

-- name: settle_step
-- A Waiting step skipped, or a map settled once its items finished. A skip is the
-- step's outcome and writes run.skipped; a map's settling is not a run's outcome of its
-- own: no event.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
settled AS (
    UPDATE rota_runs r
    SET state = %(state)s, result = %(result)s::jsonb, error = %(error)s, finished_at = t.now
    FROM t
    WHERE r.id = %(id)s AND r.state = 'waiting'
    RETURNING r.id, r.namespace, r.handler, r.queue, r.attempt, r.state
),
events AS (
    -- run.skipped enters the webhook outbox in this same statement (ADR 0017).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.skipped', d.id, d.namespace, d.handler, d.queue, 'skipped', d.attempt,
           t.now, t.now
    FROM t, settled d
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = d.namespace AND s.event_types LIKE '%%,run.skipped,%%'
     AND (s.handler IS NULL OR s.handler = d.handler) AND (s.queue IS NULL OR s.queue = d.queue)
    WHERE d.state = 'skipped'
)
SELECT id FROM settled;

-- name: open_map
UPDATE rota_runs SET open_items = %(count)s, step_input = %(step_input)s::jsonb
WHERE id = %(id)s AND state = 'waiting'
RETURNING id;

-- name: map_item_finished
UPDATE rota_runs SET open_items = open_items + %(change)s
WHERE workflow_run_id = %(workflow_run_id)s AND step_name = %(step_name)s
  AND map_index IS NULL AND state = 'waiting'
RETURNING id, open_items;

-- name: unfinished_steps
-- Under the workflow run's lock: none unfinished and none cancelled means it ended on
-- its own (succeeded or failed), and a cancel is refused.
SELECT coalesce(sum(CASE WHEN state IN ('waiting', 'pending', 'retrying', 'claimed', 'running')
                         THEN 1 ELSE 0 END), 0) AS unfinished,
       coalesce(sum(CASE WHEN state = 'cancelled' THEN 1 ELSE 0 END), 0) AS cancelled
FROM rota_runs WHERE workflow_run_id = %(id)s;

-- name: cancel_workflow_run
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
marked AS (
    UPDATE rota_workflow_runs w
    SET cancelled_at = COALESCE(w.cancelled_at, t.now)
    FROM t
    WHERE w.id = %(id)s
),
cancelled AS (
    UPDATE rota_runs r
    SET state = 'cancelled', finished_at = t.now, error = %(error)s
    FROM t
    WHERE r.workflow_run_id = %(id)s AND r.state IN ('waiting', 'pending', 'retrying')
    RETURNING r.id, r.namespace, r.handler, r.queue, r.attempt
),
events AS (
    -- run.cancelled enters the webhook outbox in this same statement (ADR 0017).
    INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace,
                                         handler, queue, run_state, attempt, occurred_at,
                                         next_attempt_at)
    SELECT s.id, 'run.cancelled', d.id, d.namespace, d.handler, d.queue, 'cancelled', d.attempt,
           t.now, t.now
    FROM t, cancelled d
    JOIN rota_webhook_subscriptions s
      ON s.enabled AND s.namespace = d.namespace AND s.event_types LIKE '%%,run.cancelled,%%'
     AND (s.handler IS NULL OR s.handler = d.handler) AND (s.queue IS NULL OR s.queue = d.queue)
)
SELECT id FROM cancelled;

-- name: cancel_workflow_active
UPDATE rota_runs SET cancel_requested = true
WHERE workflow_run_id = %(id)s AND state IN ('claimed', 'running')
RETURNING id;

-- name: reopen_steps
-- A replay: the skipped steps below the replayed one wait again; a map whose item is
-- replayed reopens (open_items counts the replay).
UPDATE rota_runs
SET state = 'waiting', result = NULL, error = NULL, finished_at = NULL,
    open_items = CASE WHEN step_name = %(map_step)s THEN open_items + 1 ELSE open_items END
WHERE workflow_run_id = %(workflow_run_id)s AND map_index IS NULL
  AND ((state = 'skipped' AND step_name = ANY(%(names)b::text[]))
       OR (state = 'failed' AND step_name = %(map_step)s))
RETURNING id;

-- name: workflow_runs_recent
-- namespaces is the caller's reach (NULL: every namespace).
SELECT id, namespace, name, created_at, cancelled_at, idempotency_key
FROM rota_workflow_runs
WHERE name = COALESCE(%(name)s::text, name)
  AND namespace = COALESCE(%(namespace)s::text, namespace)
  AND (%(namespaces)b::text[] IS NULL OR namespace = ANY(%(namespaces)b::text[]))
ORDER BY id DESC LIMIT %(limit)s;

-- name: workflow_run_steps
SELECT id, step_name, map_index, state, error, created_at, started_at, finished_at
FROM rota_runs WHERE workflow_run_id = %(id)s
ORDER BY id;

-- name: insert_map_items
-- A map fans out: one Pending run per item (items: a list of JSON texts),
-- copying the map's own row (handler, queue, options) so no item is built twice.
INSERT INTO rota_runs (namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, tags, trace_context, created_at,
                       state, workflow_run_id, step_name, map_index, step_input)
SELECT g.namespace, g.handler, g.queue, j.value::jsonb, g.priority, t.now,
       t.now - (g.run_at - g.sort_at), g.max_attempts, g.timeout_seconds, g.tags,
       g.trace_context, t.now, 'pending', g.workflow_run_id, g.step_name,
       (j.idx - 1)::integer, %(step_input)s::jsonb
FROM rota_runs AS g,
     unnest(%(items)b::text[]) WITH ORDINALITY AS j(value, idx),
     (SELECT COALESCE(%(now)s::timestamptz, now()) AS now) t
WHERE g.id = %(id)s
ORDER BY j.idx
RETURNING id;

-- name: workflow_runs_by_id
SELECT id, namespace, name, definition, payload, created_at, cancelled_at
FROM rota_workflow_runs WHERE id = %(id)s;


-- name: workflow_finished_event
-- The transaction that made a workflow run's derived state final writes its event to
-- the webhook outbox (DESIGN.md "Webhooks"). The run columns name the step that ended
-- last; handler and queue filters are about runs, so only subscriptions without them
-- get it. Duration as the workflow run's view has it: start to the last step's end.
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at,
                                     next_attempt_at, event_data)
SELECT s.id, 'workflow.finished', r.id, r.namespace, r.handler, r.queue, %(state)s,
       r.attempt, t.now, t.now,
       jsonb_build_object('id', w.id, 'name', w.name, 'state', %(state)s::text,
                          'duration_seconds',
                          round(extract(epoch FROM r.finished_at - w.created_at), 3))
FROM rota_workflow_runs w
JOIN LATERAL (SELECT id, namespace, handler, queue, attempt, finished_at FROM rota_runs
              WHERE workflow_run_id = w.id AND map_index IS NULL
                AND finished_at IS NOT NULL
              ORDER BY finished_at DESC, id DESC LIMIT 1) r ON true
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace
 AND s.event_types LIKE '%%,workflow.finished,%%' AND s.handler IS NULL AND s.queue IS NULL,
     (SELECT COALESCE(%(now)s::timestamptz, now()) AS now) t
WHERE w.id = %(id)s
RETURNING id;

-- name: workflow_runs_to_prune
-- Workflow runs whose every step row finished before the cutoff (none unfinished):
-- pruned whole, by the retention that prunes runs; a running one never is.
SELECT w.id FROM rota_workflow_runs w
WHERE w.created_at < %(older_than)s
  AND NOT EXISTS (SELECT 1 FROM rota_runs r
                  WHERE r.workflow_run_id = w.id
                    AND (r.finished_at IS NULL OR r.finished_at >= %(older_than)s))
ORDER BY w.id
LIMIT %(limit)s;

-- name: prune_workflow_runs
-- Asked again after each workflow run's row is locked: a replay committed meanwhile
-- (it locks the row too) put an unfinished step in, and that run is kept.
WITH doomed AS (
    SELECT w.id FROM rota_workflow_runs w
    WHERE w.id = ANY(%(ids)b::bigint[]) AND w.created_at < %(older_than)s
      AND NOT EXISTS (SELECT 1 FROM rota_runs r
                      WHERE r.workflow_run_id = w.id
                        AND (r.finished_at IS NULL OR r.finished_at >= %(older_than)s))
),
steps AS (SELECT id FROM rota_runs WHERE workflow_run_id IN (SELECT id FROM doomed)),
gone_attempts AS (DELETE FROM rota_attempts WHERE run_id IN (SELECT id FROM steps)),
gone_logs AS (DELETE FROM rota_run_logs WHERE run_id IN (SELECT id FROM steps)),
gone_keys AS (DELETE FROM rota_idempotency_keys WHERE run_id IN (SELECT id FROM steps)),
gone_steps AS (DELETE FROM rota_runs WHERE id IN (SELECT id FROM steps))
DELETE FROM rota_workflow_runs WHERE id IN (SELECT id FROM doomed)
RETURNING id;
