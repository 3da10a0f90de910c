-- rota schema version 19 (PostgreSQL): the state index leaves out held runs (ADR 0025).
-- A state change is never a HOT update (the claim indexes name `state`), so every
-- claim and every first renewal added an entry here for a run that stays 'claimed' or
-- 'running' for milliseconds. Held runs already have their own index, by id
-- (rota_runs_leased, migration 11): a listing of claimed or running runs and the live
-- counts read them there (at most twice the cluster's concurrency), so this index
-- need not carry them. One index entry fewer per claim and per first renewal.
-- Finished states stay in: a listing of the succeeded runs behind a large backlog of
-- newer pending ones must not walk the backlog.
-- SQLite keeps its index whole: it proves a partial index usable only when the query
-- names the index's own condition, so its listings by state would lose the index.

DROP INDEX rota_runs_state_id;
CREATE INDEX rota_runs_state_id ON rota_runs (state, id) INCLUDE (namespace, queue, run_at)
    WHERE state NOT IN ('claimed', 'running');
