-- rota schema version 11 (PostgreSQL): a heartbeat rewrites its run in place (ADR 0019).
-- A renewal changes only lease_expires_at (and, the first time, the state). While an
-- index holds lease_expires_at, every renewal is a non-HOT update: a new heap tuple and a
-- new entry in every index of rota_runs, each a dead tuple for VACUUM. Indexing the held
-- runs by id instead keeps lease_expires_at out of every index, so renewals after the
-- first are HOT updates (fillfactor 85 leaves them room). The reaper reads all held runs
-- (at most twice the cluster's total concurrency) and filters them by expiry.
DROP INDEX rota_runs_leased;
CREATE INDEX rota_runs_leased ON rota_runs (id) WHERE state IN ('claimed', 'running');
