-- rota schema version 3 (PostgreSQL): claim-time controls (tags, concurrency limits,
-- start-by deadlines), the worker registry, and request correlation ids on runs.

ALTER TABLE rota_runs
    -- A worker must have all of them. NULL, not '{}', when there are none: the planner
    -- estimates `tags IS NULL` from statistics, while `tags <@ x` gets a 0.5% guess that
    -- turns the claim into a sequential scan.
    ADD COLUMN tags text[],
    ADD COLUMN concurrency_key text,                     -- runs sharing a key share a limit
    ADD COLUMN concurrency_limit integer CHECK (concurrency_limit >= 1),
    ADD COLUMN deadline timestamptz,                     -- not started by then: cancelled
    ADD COLUMN correlation_id text;                      -- the request that created it

CREATE INDEX rota_runs_active_groups ON rota_runs (concurrency_key)
    WHERE state IN ('claimed', 'running') AND concurrency_key IS NOT NULL;
CREATE INDEX rota_runs_deadline ON rota_runs (deadline)
    WHERE deadline IS NOT NULL AND state IN ('pending', 'retrying');

-- Cluster-wide caps on running runs: scope 'global' (name '*'), 'queue' or 'handler'.
CREATE TABLE rota_limits (
    scope        text NOT NULL CHECK (scope IN ('global', 'queue', 'handler')),
    name         text NOT NULL,
    max_running  integer NOT NULL CHECK (max_running >= 1),
    PRIMARY KEY (scope, name)
);

CREATE TABLE rota_workers (
    node_id      text PRIMARY KEY,
    host         text NOT NULL,
    pid          integer NOT NULL,
    version      text NOT NULL,
    queues       text[] NOT NULL,
    tags         text[] NOT NULL,
    concurrency  integer NOT NULL,
    state        text NOT NULL CHECK (state IN ('active', 'draining', 'dead')),
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);

-- Runs without a concurrency key are claimed by the plain, lock-free path, which reads
-- this index; keyed runs take the serialised, limit-checking path and their own index.
DROP INDEX rota_runs_claimable;
CREATE INDEX rota_runs_claimable ON rota_runs (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL;
CREATE INDEX rota_runs_claimable_keyed ON rota_runs (queue, sort_at, id)
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL;
