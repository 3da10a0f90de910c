-- rota schema version 16 (SQLite): the dashboard's counts read cheaply at any size
-- (DESIGN.md "The dashboard", ADR 0014).
-- The state index also holds what the live counts read (namespace, queue, run_at): the
-- same index, the same writes, wider entries; counting live runs reads it alone.
-- Finished runs are counted per minute by the leader (rota_finished_minutes, up to
-- rota_finished_rollup.counted_until); a read of the last hour adds the few minutes
-- since to those rows instead of grouping every run that finished in the hour.

DROP INDEX rota_runs_state_id;
CREATE INDEX rota_runs_state_id ON rota_runs (state, id, namespace, queue, run_at);

CREATE TABLE rota_finished_minutes (
    minute     REAL NOT NULL,
    namespace  TEXT NOT NULL,
    queue      TEXT NOT NULL,
    state      TEXT NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (minute, namespace, queue, state)
) WITHOUT ROWID;

CREATE TABLE rota_finished_rollup (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    counted_from   REAL NOT NULL,  -- every minute from here to counted_until is counted
    counted_until  REAL NOT NULL
);
