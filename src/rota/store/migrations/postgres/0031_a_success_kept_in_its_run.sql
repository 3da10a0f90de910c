-- rota schema version 31 (PostgreSQL): a run that succeeds keeps its last attempt in its
-- own row (issue 24). The completion wrote an attempt row for every run it finished,
-- though a succeeded run's fence, worker, start and finish are that attempt's and
-- nothing changes them after (a success is final; a replay is a new run): a heap row and
-- an index entry per run, 15% of the server's CPU per run of the no-op drain. Now only
-- an outcome other than a success gets its row, and rota_run_attempts reads every
-- attempt: the rows kept, and a succeeded run's own row as its last attempt where no row
-- holds it (runs that succeeded before this version have theirs). Reads of a run's
-- attempts, the check after an ambiguous commit, the bench and chaos read the view.
CREATE VIEW rota_run_attempts AS
SELECT run_id, fence, attempt, worker_id, started_at, finished_at, outcome, error
FROM rota_attempts
UNION ALL
SELECT r.id, r.fence, r.attempt, r.worker_id, r.started_at, r.finished_at, 'succeeded', NULL
FROM rota_runs_history r
WHERE r.state = 'succeeded'
  AND NOT EXISTS (SELECT 1 FROM rota_attempts a WHERE a.run_id = r.id AND a.fence = r.fence);
