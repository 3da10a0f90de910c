-- Jobs (schedules) and the planner's writes.

-- name: save_job
INSERT INTO rota_jobs AS j (namespace, name, spec, cursor, next_fire_at, created_at, updated_at)
VALUES (%(namespace)s, %(name)s, %(spec)s::jsonb, %(cursor)s, %(next_fire_at)s,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (namespace, name) DO UPDATE
SET spec = EXCLUDED.spec, cursor = EXCLUDED.cursor, next_fire_at = EXCLUDED.next_fire_at,
    updated_at = EXCLUDED.updated_at,
    -- an update may well fix what failed: plan it again at once
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
RETURNING *;

-- name: get_job
SELECT * FROM rota_jobs WHERE namespace = %(namespace)s AND name = %(name)s;

-- name: get_job_by_id
SELECT * FROM rota_jobs WHERE id = %(id)s;

-- name: list_jobs
SELECT * FROM rota_jobs
WHERE (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
ORDER BY namespace, name;

-- name: delete_job
DELETE FROM rota_jobs WHERE namespace = %(namespace)s AND name = %(name)s RETURNING id;

-- name: set_job_paused
-- Resuming plans from now on: slots that fell in the pause are not caught up.
UPDATE rota_jobs
SET paused = %(paused)s,
    cursor = CASE WHEN paused AND NOT %(paused)s THEN %(cursor)s ELSE cursor END,
    next_fire_at = CASE WHEN paused AND NOT %(paused)s THEN %(next_fire_at)s ELSE next_fire_at END,
    planning_retry_at = CASE WHEN NOT %(paused)s THEN NULL ELSE planning_retry_at END,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE namespace = %(namespace)s AND name = %(name)s
RETURNING *;

-- name: due_jobs
-- A job set aside after a planning error waits for its retry instant.
SELECT * FROM rota_jobs
WHERE NOT paused AND next_fire_at <= %(until)s
  AND (planning_retry_at IS NULL OR planning_retry_at <= %(until)s)
ORDER BY next_fire_at
LIMIT %(limit)s;

-- name: advance_jobs
-- Compare-and-set on each cursor: of several planners that read the same cursor, one
-- moves it.
UPDATE rota_jobs j
SET cursor = a.cursor, next_fire_at = a.next_fire_at,
    updated_at = COALESCE(%(now)s::timestamptz, now()),
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
FROM unnest(%(id)b::bigint[], %(expected_cursor)b::timestamptz[], %(cursor)b::timestamptz[],
            %(next_fire_at)b::timestamptz[]) AS a(id, expected, cursor, next_fire_at)
WHERE j.id = a.id AND j.cursor = a.expected AND NOT j.paused
RETURNING j.id;

-- name: set_job_aside
-- Planning this job failed: say why, and when to try again. Its cursor stays.
UPDATE rota_jobs
SET planning_error = %(error)s, planning_failed_at = COALESCE(%(now)s::timestamptz, now()),
    planning_failures = planning_failures + 1, planning_retry_at = %(retry_at)s
WHERE id = %(id)s
RETURNING id;

-- name: recent_starts
-- The newest slot runs of each job, by its (job_id, id) index in both homes: when each
-- slot's run started (the Jobs page, `rota jobs show`).
SELECT j.job_id, r.id, r.slot_at, r.started_at, r.state, r.error
FROM unnest(%(job_ids)b::bigint[]) AS j(job_id)
CROSS JOIN LATERAL (
    SELECT id, slot_at, started_at, state, error FROM rota_runs
    WHERE job_id = j.job_id AND slot_at IS NOT NULL
    ORDER BY id DESC
    LIMIT %(per_job)s) AS r;
