-- Bulk actions on the runs a filter matches (rota.services.bulk_actions). The walk
-- itself reads search_runs page by page; these count and delete.

-- name: count_matching_runs
-- How many runs search_runs would return without a limit, and the newest one's id (the
-- top the walk starts below). The WHERE is search_runs' own, but for its keyset line
-- (tests/store/test_sql_copies.py holds the two together).
SELECT count(*) AS count, max(r.id) AS top_id FROM rota_runs r
WHERE (%(namespaces)b::text[] IS NULL OR r.namespace = ANY(%(namespaces)b::text[]))
  AND (%(states)b::text[] IS NULL OR r.state = ANY(%(states)b::text[]))
  AND (%(handler)s::text IS NULL OR r.handler = %(handler)s)
  AND (%(queue)s::text IS NULL OR r.queue = %(queue)s)
  AND (%(tag)s::text IS NULL OR r.tags @> ARRAY[%(tag)s::text])
  AND (%(job_id)s::bigint IS NULL OR r.job_id = %(job_id)s)
  AND (%(owner)s::text IS NULL OR r.owner = %(owner)s)
  AND (%(labels)s::jsonb IS NULL OR r.labels @> %(labels)s::jsonb)
  AND (%(priority)s::smallint IS NULL OR r.priority = %(priority)s)
  AND (%(created_after)s::timestamptz IS NULL OR r.created_at >= %(created_after)s)
  AND (%(created_before)s::timestamptz IS NULL OR r.created_at < %(created_before)s)
  AND (%(pattern)s::text IS NULL
       OR lower(r.handler) LIKE lower(%(pattern)s) ESCAPE '\'
       OR lower(r.error) LIKE lower(%(pattern)s) ESCAPE '\'
       OR r.job_id IN (SELECT j.id FROM rota_jobs j
                       WHERE lower(j.name) LIKE lower(%(pattern)s) ESCAPE '\'));

-- name: delete_finished_runs
-- The given runs that are finished (in history) and not a workflow's step (those go
-- with their workflow run), with their attempts, logs and idempotency keys; one row per
-- deleted run. One statement: the CTEs see the same snapshot.
WITH doomed AS (
    SELECT id FROM rota_runs_history
    WHERE id = ANY(%(ids)b::bigint[]) AND workflow_run_id IS NULL
),
gone_attempts AS (DELETE FROM rota_attempts WHERE run_id IN (SELECT id FROM doomed)),
gone_logs AS (DELETE FROM rota_run_logs WHERE run_id IN (SELECT id FROM doomed)),
gone_keys AS (DELETE FROM rota_idempotency_keys WHERE run_id IN (SELECT id FROM doomed))
DELETE FROM rota_runs_history WHERE id IN (SELECT id FROM doomed)
RETURNING id;
