-- rota schema version 4 (PostgreSQL): what the HTTP API keeps. API keys for machines
-- (only a hash of the secret), the audit log of mutating calls, and an index that lets
-- /health/ready find the oldest due run without scanning the backlog.

CREATE TABLE rota_api_keys (
    key_id       text PRIMARY KEY,            -- public part of rota_<key_id>_<secret>
    secret_hash  text NOT NULL,               -- sha256 of the secret, hex
    name         text NOT NULL,
    scopes       text[] NOT NULL,
    namespaces   text[] NOT NULL,             -- {'*'}: every namespace
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);

CREATE TABLE rota_audit_log (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL,
    actor           text NOT NULL,            -- jwt:<sub> or api_key:<key_id>
    action          text NOT NULL,            -- jobs.create, runs.cancel, ...
    target          text NOT NULL,
    namespace       text,                     -- NULL: cluster-wide (keys, workers)
    status          integer NOT NULL,         -- the HTTP status answered
    outcome         text NOT NULL,            -- ok, denied, rejected, failed
    correlation_id  text,
    detail          text
);
CREATE INDEX rota_audit_log_namespace ON rota_audit_log (namespace, id);

-- Only waiting rows: small, and what readiness asks ("how long has the oldest due run
-- waited?") is one index probe.
CREATE INDEX rota_runs_due ON rota_runs (run_at) WHERE state IN ('pending', 'retrying');
