-- rota schema version 5 (PostgreSQL): a job whose planning fails is set aside, not fatal.
-- The planner records why and when, and retries it after a growing delay (or at once
-- when the job is updated or resumed); meanwhile every other job is planned as usual.

ALTER TABLE rota_jobs
    ADD COLUMN planning_error text,
    ADD COLUMN planning_failed_at timestamptz,
    ADD COLUMN planning_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN planning_retry_at timestamptz;
