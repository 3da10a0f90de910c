-- rota schema version 11 (SQLite): held runs indexed by id, not by lease expiry (ADR
-- 0019), as on PostgreSQL: a renewal then leaves every index of rota_runs untouched.
-- The reaper reads all held runs (at most twice the cluster's total concurrency) and
-- filters them by expiry.
DROP INDEX rota_runs_leased;
CREATE INDEX rota_runs_leased ON rota_runs (id) WHERE state IN ('claimed', 'running');
