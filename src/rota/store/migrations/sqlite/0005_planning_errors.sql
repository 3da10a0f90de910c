-- rota schema version 5 (SQLite): a job whose planning fails is set aside, not fatal.
-- The planner records why and when, and retries it after a growing delay (or at once
-- when the job is updated or resumed); meanwhile every other job is planned as usual.

ALTER TABLE rota_jobs ADD COLUMN planning_error TEXT;
ALTER TABLE rota_jobs ADD COLUMN planning_failed_at REAL;
ALTER TABLE rota_jobs ADD COLUMN planning_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN planning_retry_at REAL;
