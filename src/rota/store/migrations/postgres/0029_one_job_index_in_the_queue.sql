-- rota schema version 29 (PostgreSQL): the queue keeps one index by job, not two (issue
-- 25, ADR 0027). rota_runs_job_live (job_id, state) was made for the overlap check's
-- count of a job's live runs (job_run_counts); since overlap is decided by the claim on
-- the job's overlap key (ADR 0029) no query reads it, and every read by job (a run
-- search or bulk action by job, recent_starts) goes by (job_id, id), which the queue
-- partition has too (rota_runs_job_id's partition copy). A claim is never a HOT update,
-- so each index of the queue costs an entry when a slot's run is planned and another
-- when it is claimed: one of each fewer per scheduled run.

DROP INDEX rota_runs_job_live;
