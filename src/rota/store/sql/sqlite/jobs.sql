-- Jobs (schedules) and the planner's writes.

-- name: save_job
INSERT INTO rota_jobs (namespace, name, spec, cursor, next_fire_at, created_at, updated_at)
VALUES (:namespace, :name, :spec, :cursor, :next_fire_at, :now, :now)
ON CONFLICT (namespace, name) DO UPDATE
SET spec = excluded.spec, cursor = excluded.cursor, next_fire_at = excluded.next_fire_at,
    updated_at = excluded.updated_at,
    -- an update may well fix what failed: plan it again at once
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
RETURNING *;

-- name: get_job
SELECT * FROM rota_jobs WHERE namespace = :namespace AND name = :name;

-- name: get_job_by_id
SELECT * FROM rota_jobs WHERE id = :id;

-- name: list_jobs
SELECT * FROM rota_jobs
WHERE (:namespace IS NULL OR namespace = :namespace)
ORDER BY namespace, name;

-- name: delete_job
DELETE FROM rota_jobs WHERE namespace = :namespace AND name = :name RETURNING id;

-- name: set_job_paused
-- Resuming plans from now on: slots that fell in the pause are not caught up.
UPDATE rota_jobs
SET cursor = CASE WHEN paused AND NOT :paused THEN :cursor ELSE cursor END,
    next_fire_at = CASE WHEN paused AND NOT :paused THEN :next_fire_at ELSE next_fire_at END,
    paused = :paused,
    planning_retry_at = CASE WHEN NOT :paused THEN NULL ELSE planning_retry_at END,
    updated_at = :now
WHERE namespace = :namespace AND name = :name
RETURNING *;

-- name: due_jobs
-- A job set aside after a planning error waits for its retry instant.
SELECT * FROM rota_jobs
WHERE NOT paused AND next_fire_at <= :until
  AND (planning_retry_at IS NULL OR planning_retry_at <= :until)
ORDER BY next_fire_at
LIMIT :limit;

-- name: advance_jobs
-- Compare-and-set on the cursor: of several planners that read the same cursor, one
-- moves it.
UPDATE rota_jobs
SET cursor = :cursor, next_fire_at = :next_fire_at, updated_at = :now,
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
WHERE id = :id AND cursor = :expected_cursor AND NOT paused
RETURNING id;

-- name: set_job_aside
-- Planning this job failed: say why, and when to try again. Its cursor stays.
UPDATE rota_jobs
SET planning_error = :error, planning_failed_at = :now,
    planning_failures = planning_failures + 1, planning_retry_at = :retry_at
WHERE id = :id
RETURNING id;

-- name: recent_starts
-- The newest slot runs of each job, in each home by its (job_id, id) index: when each
-- slot's run started (the Jobs page, `rota jobs show`). The caller keeps the newest of
-- both homes.
SELECT r.job_id, r.id, r.slot_at, r.started_at, r.state, r.error
FROM json_each(:job_ids) AS j
JOIN rota_runs AS r ON r.id IN (
    SELECT id FROM (
        SELECT id FROM rota_runs_live
        WHERE job_id = j.value AND slot_at IS NOT NULL ORDER BY id DESC LIMIT :per_job)
    UNION ALL
    SELECT id FROM (
        SELECT id FROM rota_runs_history
        WHERE job_id = j.value AND slot_at IS NOT NULL ORDER BY id DESC LIMIT :per_job));
