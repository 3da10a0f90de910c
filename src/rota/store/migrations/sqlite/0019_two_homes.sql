-- rota schema version 19 (SQLite): a run has two homes (ADR 0027). rota_runs_live holds
-- the runs a claim, a renewal, the reaper or a workflow release still needs;
-- rota_runs_history every finished run. The statement that finishes a run moves it
-- (the trigger below runs inside that statement), so a run is never in both or in
-- neither and its id never changes; rota_runs, a view of both, is what reads name.
-- Writes name the home they change. History is one table, pruned in batches.
--
-- The upgrade copies no finished run: the table as it was becomes history, once its
-- unfinished runs have moved to the queue. Its cost grows with the backlog, not with
-- the history kept.

ALTER TABLE rota_runs RENAME TO rota_runs_history;
-- Only history's indexes stay on it: by state, by handler, a job's and a workflow's
-- runs, the finish time (the per-minute rollup, retention) and the idempotency key.
DROP INDEX rota_runs_claimable;
DROP INDEX rota_runs_claimable_keyed;
DROP INDEX rota_runs_leased;
DROP INDEX rota_runs_due;
DROP INDEX rota_runs_deadline;
DROP INDEX rota_runs_active_groups;
DROP INDEX rota_runs_job_live;

-- Ids are never reused: a run that leaves the queue may have held its highest id, and
-- SQLite would otherwise hand that id out again (AUTOINCREMENT remembers the highest).
CREATE TABLE rota_runs_live (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace        TEXT NOT NULL DEFAULT 'default',
    handler          TEXT NOT NULL,
    queue            TEXT NOT NULL DEFAULT 'default',
    state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN (
                         'pending', 'claimed', 'running', 'succeeded', 'failed', 'retrying',
                         'timed_out', 'cancelled', 'dead_lettered', 'waiting', 'skipped')),
    payload          TEXT NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 5 CHECK (priority BETWEEN 1 AND 10),
    run_at           REAL NOT NULL,
    sort_at          REAL NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    fence            INTEGER NOT NULL DEFAULT 0,
    timeout_seconds  REAL CHECK (timeout_seconds > 0),
    worker_id        TEXT,
    lease_expires_at REAL,
    idempotency_key  TEXT,
    result           TEXT,
    error            TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    lost_count       INTEGER NOT NULL DEFAULT 0,
    replay_of        INTEGER,
    created_at       REAL NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    job_id           INTEGER,
    slot_at          REAL,
    tags             TEXT,
    concurrency_key  TEXT,
    concurrency_limit INTEGER CHECK (concurrency_limit >= 1),
    deadline         REAL,
    correlation_id   TEXT,
    trace_context    TEXT,
    rate_key         TEXT,
    breaker_key      TEXT,
    workflow_run_id  INTEGER,
    step_name        TEXT,
    map_index        INTEGER,
    open_items       INTEGER,
    step_input       TEXT
);

INSERT INTO rota_runs_live SELECT * FROM rota_runs_history
WHERE state IN ('pending', 'claimed', 'running', 'retrying', 'waiting');
DELETE FROM rota_runs_history
WHERE state IN ('pending', 'claimed', 'running', 'retrying', 'waiting');
-- The highest id ever handed out, whichever home it is in now.
DELETE FROM sqlite_sequence WHERE name = 'rota_runs_live';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'rota_runs_live', max(id)
FROM (SELECT id FROM rota_runs_live UNION ALL SELECT id FROM rota_runs_history)
HAVING max(id) IS NOT NULL;

CREATE VIEW rota_runs AS
SELECT * FROM rota_runs_live UNION ALL SELECT * FROM rota_runs_history;

-- The queue: what claims, renewals, the reaper, the planner and the live counts read.
CREATE INDEX rota_runs_claimable ON rota_runs_live (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL;
CREATE INDEX rota_runs_claimable_keyed ON rota_runs_live (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL;
CREATE INDEX rota_runs_leased ON rota_runs_live (id) WHERE state IN ('claimed', 'running');
CREATE INDEX rota_runs_due ON rota_runs_live (run_at) WHERE state IN ('pending', 'retrying');
CREATE INDEX rota_runs_deadline ON rota_runs_live (deadline)
    WHERE deadline IS NOT NULL AND state IN ('pending', 'retrying');
CREATE INDEX rota_runs_active_groups ON rota_runs_live (concurrency_key)
    WHERE state IN ('claimed', 'running') AND concurrency_key IS NOT NULL;
CREATE INDEX rota_runs_job_live ON rota_runs_live (job_id, state) WHERE job_id IS NOT NULL;
CREATE INDEX rota_runs_live_state_id ON rota_runs_live (state, id, namespace, queue, run_at);
CREATE INDEX rota_runs_live_job_id ON rota_runs_live (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX rota_runs_live_workflow_step
    ON rota_runs_live (workflow_run_id, step_name, map_index) WHERE workflow_run_id IS NOT NULL;
CREATE UNIQUE INDEX rota_runs_live_idempotency
    ON rota_runs_live (namespace, handler, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- An idempotency key names one run in either home: a new run whose key a finished run
-- holds is not written (as ON CONFLICT DO NOTHING does for a live one). A run coming
-- back from history (a workflow step reopened) is that same run.
CREATE TRIGGER rota_runs_key_in_history BEFORE INSERT ON rota_runs_live
WHEN NEW.idempotency_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM rota_runs_history h
    WHERE h.namespace = NEW.namespace AND h.handler = NEW.handler
      AND h.idempotency_key = NEW.idempotency_key AND h.id IS NOT NEW.id)
BEGIN
    SELECT RAISE(IGNORE);
END;

-- The moves, inside the statement that changes the state.
CREATE TRIGGER rota_runs_finished_move AFTER UPDATE OF state ON rota_runs_live
WHEN NEW.state IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'dead_lettered', 'skipped')
BEGIN
    INSERT INTO rota_runs_history SELECT * FROM rota_runs_live WHERE id = NEW.id;
    DELETE FROM rota_runs_live WHERE id = NEW.id;
END;

