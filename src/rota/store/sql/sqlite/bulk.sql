-- Bulk actions on the runs a filter matches (rota.services.bulk_actions). The walk
-- itself reads search_runs page by page; these count and delete.

-- name: count_matching_runs
-- How many runs search_runs would return without a limit, and the newest one's id (the
-- top the walk starts below). The WHERE is search_runs' own, but for its keyset line
-- (tests/store/test_sql_copies.py holds the two together).
SELECT count(*) AS count, max(r.id) AS top_id FROM (
    -- Each home read only if a state asked for can be in it (search_filter's in_live
    -- and in_history, evaluated once): through the view, a search for pending runs
    -- walked all of history for them (270 ms at 1,000,000 runs, 1 ms this way).
    SELECT * FROM rota_runs_live WHERE :in_live
    UNION ALL
    SELECT * FROM rota_runs_history WHERE :in_history) r
WHERE (:namespaces IS NULL OR r.namespace IN (SELECT value FROM json_each(:namespaces)))
  AND (:states IS NULL OR r.state IN (SELECT value FROM json_each(:states)))
  AND (:handler IS NULL OR r.handler = :handler)
  AND (:queue IS NULL OR r.queue = :queue)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(r.tags) WHERE value = :tag))
  AND (:job_id IS NULL OR r.job_id = :job_id)
  AND (:owner IS NULL OR r.owner = :owner)
  AND (:labels IS NULL OR NOT EXISTS (
         SELECT 1 FROM json_each(:labels) f
         WHERE NOT EXISTS (SELECT 1 FROM json_each(r.labels) l
                           WHERE l.key = f.key AND l.value = f.value)))
  AND (:priority IS NULL OR r.priority = :priority)
  AND (:created_after IS NULL OR r.created_at >= :created_after)
  AND (:created_before IS NULL OR r.created_at < :created_before)
  AND (:pattern IS NULL
       OR r.handler LIKE :pattern ESCAPE '\'
       OR r.error LIKE :pattern ESCAPE '\'
       OR EXISTS (SELECT 1 FROM rota_jobs j
                  WHERE j.id = r.job_id AND j.name LIKE :pattern ESCAPE '\'));

-- name: delete_finished_runs
-- The given runs that are finished (in history) and not a workflow's step (those go
-- with their workflow run), with their attempts and logs; one row per deleted run.
-- Each delete picks the runs alike (the runs are deleted last).
DELETE FROM rota_attempts WHERE run_id IN (
    SELECT id FROM rota_runs_history
    WHERE id IN (SELECT value FROM json_each(:ids)) AND workflow_run_id IS NULL);
DELETE FROM rota_run_logs WHERE run_id IN (
    SELECT id FROM rota_runs_history
    WHERE id IN (SELECT value FROM json_each(:ids)) AND workflow_run_id IS NULL);
DELETE FROM rota_runs_history
WHERE id IN (SELECT value FROM json_each(:ids)) AND workflow_run_id IS NULL
RETURNING id;
