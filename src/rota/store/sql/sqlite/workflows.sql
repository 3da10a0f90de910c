-- Workflows: starting a workflow run, releasing, skipping and settling its steps in
-- the transaction that finished a parent, cancelling and replaying (DESIGN.md
-- "Workflows"). Steps are runs in rota_runs tagged with workflow_run_id and
-- step_name; a map's items also carry map_index, and the map's own row counts its
-- unfinished items in open_items.

-- name: insert_workflow_run
-- A repeated idempotency key inserts nothing (workflow_run_by_key finds the first).
INSERT INTO rota_workflow_runs (namespace, name, definition, payload, created_at,
                                idempotency_key)
VALUES (:namespace, :name, :definition, :payload, :now, :idempotency_key)
ON CONFLICT (namespace, name, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING id;

-- name: workflow_run_by_key
SELECT id FROM rota_workflow_runs
WHERE namespace = :namespace AND name = :name AND idempotency_key = :idempotency_key;

-- name: insert_steps
INSERT INTO rota_runs_live (namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, idempotency_key, replay_of, tags,
                       trace_context, created_at, state, workflow_run_id, step_name,
                       map_index, step_input)
VALUES (:namespace, :handler, :queue, :payload, :priority, :now,
        :now - :priority * :aging_seconds, :max_attempts, :timeout_seconds,
        :idempotency_key, :replay_of, :tags, :trace_context, :now, :state,
        :workflow_run_id, :step_name, :map_index, :step_input)
ON CONFLICT (namespace, handler, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING id;

-- name: lock_workflow_run
-- BEGIN IMMEDIATE already serialises every writer: no lock to take.
SELECT id, name, definition, payload, cancelled_at FROM rota_workflow_runs WHERE id = :id;

-- name: workflow_steps_of
-- By rowid, whatever the statistics say (stale ones once made it walk
-- rota_runs_workflow_step over every step of every workflow run, per completion): the
-- unary + keeps the test from matching that partial index in either home.
SELECT id, workflow_run_id, step_name, map_index, state, step_input FROM rota_runs
WHERE id IN (SELECT value FROM json_each(:ids)) AND +workflow_run_id IS NOT NULL;

-- name: step_rows
-- Each step's own rows (not a map's items), oldest first: the last one per name is
-- the step's current run (a replay adds a row). Naming the steps lets the index
-- seek each one instead of reading past a big map's items.
SELECT id, step_name, state, result, open_items FROM rota_runs
WHERE workflow_run_id = :workflow_run_id AND map_index IS NULL
  AND step_name IN (SELECT value FROM json_each(:names))
ORDER BY id;

-- name: map_item_rows
SELECT id, map_index, state, result FROM rota_runs
WHERE workflow_run_id = :workflow_run_id AND step_name = :step_name
  AND map_index IS NOT NULL
ORDER BY map_index, id;

-- name: release_step
UPDATE rota_runs_live
-- sort_at keeps the lead over run_at its priority gave it at insert.
SET state = 'pending', step_input = :step_input, run_at = :now,
    sort_at = :now - (run_at - sort_at)
WHERE id = :id AND state = 'waiting'
RETURNING id;

-- name: settle_step
-- A Waiting step skipped, or a map settled once its items finished.
-- A skip is the step's outcome: run.skipped enters the webhook outbox in this same
-- transaction (ADR 0017). A map's settling is not a run's outcome of its own: no event.
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.skipped', r.id, r.namespace, r.handler, r.queue, 'skipped', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.skipped,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.id = :id AND r.state = 'waiting' AND :state = 'skipped';
UPDATE rota_runs_live
SET state = :state, result = :result, error = :error, finished_at = :now
WHERE id = :id AND state = 'waiting'
RETURNING id;

-- name: open_map
UPDATE rota_runs_live SET open_items = :count, step_input = :step_input
WHERE id = :id AND state = 'waiting'
RETURNING id;

-- name: map_item_finished
UPDATE rota_runs_live SET open_items = open_items + :change
WHERE workflow_run_id = :workflow_run_id AND step_name = :step_name
  AND map_index IS NULL AND state = 'waiting'
RETURNING id, open_items;

-- name: unfinished_steps
-- Under the workflow run's lock: none unfinished and none cancelled means it ended on
-- its own (succeeded or failed), and a cancel is refused.
SELECT coalesce(sum(CASE WHEN state IN ('waiting', 'pending', 'retrying', 'claimed', 'running')
                         THEN 1 ELSE 0 END), 0) AS unfinished,
       coalesce(sum(CASE WHEN state = 'cancelled' THEN 1 ELSE 0 END), 0) AS cancelled
FROM rota_runs WHERE workflow_run_id = :id;

-- name: cancel_workflow_run
UPDATE rota_workflow_runs SET cancelled_at = COALESCE(cancelled_at, :now)
WHERE id = :id;
-- run.cancelled enters the webhook outbox in this same transaction (ADR 0017).
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at, next_attempt_at)
SELECT s.id, 'run.cancelled', r.id, r.namespace, r.handler, r.queue, 'cancelled', r.attempt,
       :now, :now
FROM rota_runs_live r
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace AND s.event_types LIKE '%,run.cancelled,%'
 AND (s.handler IS NULL OR s.handler = r.handler) AND (s.queue IS NULL OR s.queue = r.queue)
WHERE r.workflow_run_id = :id AND r.state IN ('waiting', 'pending', 'retrying');
UPDATE rota_runs_live SET state = 'cancelled', finished_at = :now, error = :error
WHERE workflow_run_id = :id AND state IN ('waiting', 'pending', 'retrying')
RETURNING id;

-- name: cancel_workflow_active
UPDATE rota_runs_live SET cancel_requested = 1
WHERE workflow_run_id = :id AND state IN ('claimed', 'running')
RETURNING id;

-- name: reopen_steps
-- A replay: the skipped steps below the replayed one wait again; a map whose item is
-- replayed reopens (open_items counts the replay).
-- Those steps come back from history to the queue first (the same rows, ids kept).
INSERT INTO rota_runs_live
SELECT * FROM rota_runs_history
WHERE workflow_run_id = :workflow_run_id AND map_index IS NULL
  AND ((state = 'skipped' AND step_name IN (SELECT value FROM json_each(:names)))
       OR (state = 'failed' AND step_name = :map_step));
DELETE FROM rota_runs_history
WHERE id IN (SELECT id FROM rota_runs_live
             WHERE workflow_run_id = :workflow_run_id AND map_index IS NULL
               AND state IN ('skipped', 'failed'));
UPDATE rota_runs_live
SET state = 'waiting', result = NULL, error = NULL, finished_at = NULL,
    open_items = CASE WHEN step_name = :map_step THEN open_items + 1 ELSE open_items END
WHERE workflow_run_id = :workflow_run_id AND map_index IS NULL
  AND ((state = 'skipped' AND step_name IN (SELECT value FROM json_each(:names)))
       OR (state = 'failed' AND step_name = :map_step))
RETURNING id;

-- name: workflow_runs_recent
-- :namespaces is the caller's reach (NULL: every namespace).
SELECT id, namespace, name, created_at, cancelled_at, idempotency_key
FROM rota_workflow_runs
WHERE name = COALESCE(:name, name) AND namespace = COALESCE(:namespace, namespace)
  AND (:namespaces IS NULL OR namespace IN (SELECT value FROM json_each(:namespaces)))
ORDER BY id DESC LIMIT :limit;

-- name: workflow_run_steps
SELECT id, step_name, map_index, state, error, created_at, started_at, finished_at
FROM rota_runs WHERE workflow_run_id = :id
ORDER BY id;

-- name: insert_map_items
-- A map fans out: one Pending run per item (:items is a list of JSON texts), copying
-- the map's own row (handler, queue, options) so no item is built twice.
INSERT INTO rota_runs_live (namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, tags, trace_context, created_at,
                       state, workflow_run_id, step_name, map_index, step_input)
SELECT g.namespace, g.handler, g.queue, j.value, g.priority, :now,
       :now - (g.run_at - g.sort_at), g.max_attempts, g.timeout_seconds, g.tags,
       g.trace_context, :now, 'pending', g.workflow_run_id, g.step_name, j.key,
       :step_input
FROM rota_runs AS g, json_each(:items) AS j
WHERE g.id = :id
ORDER BY j.key
RETURNING id;

-- name: workflow_runs_by_id
SELECT id, namespace, name, definition, payload, created_at, cancelled_at
FROM rota_workflow_runs WHERE id = :id;


-- name: workflow_finished_event
-- The transaction that made a workflow run's derived state final writes its event to
-- the webhook outbox (DESIGN.md "Webhooks"). The run columns name the step that ended
-- last; handler and queue filters are about runs, so only subscriptions without them
-- get it. Duration as the workflow run's view has it: start to the last step's end.
INSERT INTO rota_webhook_deliveries (subscription_id, event_type, run_id, namespace, handler,
                                     queue, run_state, attempt, occurred_at,
                                     next_attempt_at, event_data)
SELECT s.id, 'workflow.finished', r.id, r.namespace, r.handler, r.queue, :state,
       r.attempt, :now, :now,
       json_object('id', w.id, 'name', w.name, 'state', :state,
                   'duration_seconds', round(r.finished_at - w.created_at, 3))
FROM rota_workflow_runs w
JOIN rota_runs r ON r.id = (
    SELECT id FROM rota_runs
    WHERE workflow_run_id = w.id AND map_index IS NULL AND finished_at IS NOT NULL
    ORDER BY finished_at DESC, id DESC LIMIT 1)
JOIN rota_webhook_subscriptions s
  ON s.enabled AND s.namespace = r.namespace
 AND s.event_types LIKE '%,workflow.finished,%' AND s.handler IS NULL AND s.queue IS NULL
WHERE w.id = :id
RETURNING id;

-- name: workflow_runs_to_prune
-- Workflow runs whose every step row finished before the cutoff (none unfinished):
-- pruned whole, by the retention that prunes runs; a running one never is.
SELECT w.id FROM rota_workflow_runs w
WHERE w.created_at < :older_than
  AND NOT EXISTS (SELECT 1 FROM rota_runs r
                  WHERE r.workflow_run_id = w.id
                    AND (r.finished_at IS NULL OR r.finished_at >= :older_than))
ORDER BY w.id
LIMIT :limit;

-- name: prune_workflow_runs
-- BEGIN IMMEDIATE holds the one writer lock: nothing changes between these deletes,
-- so each picks the same workflow runs (their steps are deleted before them).
DELETE FROM rota_attempts WHERE run_id IN (
    SELECT r.id FROM rota_runs r
    WHERE r.workflow_run_id IN (SELECT value FROM json_each(:ids))
      AND NOT EXISTS (SELECT 1 FROM rota_runs u
                      WHERE u.workflow_run_id = r.workflow_run_id
                        AND (u.finished_at IS NULL OR u.finished_at >= :older_than)));
DELETE FROM rota_run_logs WHERE run_id IN (
    SELECT r.id FROM rota_runs r
    WHERE r.workflow_run_id IN (SELECT value FROM json_each(:ids))
      AND NOT EXISTS (SELECT 1 FROM rota_runs u
                      WHERE u.workflow_run_id = r.workflow_run_id
                        AND (u.finished_at IS NULL OR u.finished_at >= :older_than)));
-- Every step of such a workflow run has finished: they are all in history.
DELETE FROM rota_runs_history
WHERE workflow_run_id IN (SELECT value FROM json_each(:ids))
  AND NOT EXISTS (SELECT 1 FROM rota_runs u
                  WHERE u.workflow_run_id = rota_runs_history.workflow_run_id
                    AND (u.finished_at IS NULL OR u.finished_at >= :older_than));
DELETE FROM rota_workflow_runs
WHERE id IN (SELECT value FROM json_each(:ids)) AND created_at < :older_than
  AND NOT EXISTS (SELECT 1 FROM rota_runs u
                  WHERE u.workflow_run_id = rota_workflow_runs.id
                    AND (u.finished_at IS NULL OR u.finished_at >= :older_than))
RETURNING id;
