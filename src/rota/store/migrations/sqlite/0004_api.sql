-- rota schema version 4 (SQLite): what the HTTP API keeps. API keys for machines
-- (only a hash of the secret), the audit log of mutating calls, and an index that lets
-- /health/ready find the oldest due run without scanning the backlog. Lists are JSON.

CREATE TABLE rota_api_keys (
    key_id       TEXT PRIMARY KEY,
    secret_hash  TEXT NOT NULL,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    namespaces   TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   REAL NOT NULL,
    revoked_at   REAL
);

CREATE TABLE rota_audit_log (
    id              INTEGER PRIMARY KEY,
    at              REAL NOT NULL,
    actor           TEXT NOT NULL,
    action          TEXT NOT NULL,
    target          TEXT NOT NULL,
    namespace       TEXT,
    status          INTEGER NOT NULL,
    outcome         TEXT NOT NULL,
    correlation_id  TEXT,
    detail          TEXT
);
CREATE INDEX rota_audit_log_namespace ON rota_audit_log (namespace, id);

CREATE INDEX rota_runs_due ON rota_runs (run_at) WHERE state IN ('pending', 'retrying');
