-- rota schema version 29 (SQLite): the queue keeps one index by job, not two (issue 25,
-- ADR 0027), as on PostgreSQL (its migration 29). rota_runs_job_live (job_id, state) was
-- made for the overlap check's count of a job's live runs; no query reads it since
-- overlap moved to the claim (ADR 0029), and every read by job goes by
-- rota_runs_live_job_id (job_id, id). It names `state`, so each claim and each
-- completion of a scheduled run rewrote an entry in it.

DROP INDEX rota_runs_job_live;
