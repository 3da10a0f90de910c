-- rota schema version 31 (SQLite): every attempt is read through rota_run_attempts, as
-- on PostgreSQL (its migration 31, where a succeeded run keeps its last attempt in its
-- own row and the view adds it). SQLite's completion still writes an attempt row for
-- every outcome: its statements act only where that row was written (leases.sql), so
-- here the view is the table.
CREATE VIEW rota_run_attempts AS
SELECT run_id, fence, attempt, worker_id, started_at, finished_at, outcome, error
FROM rota_attempts;
