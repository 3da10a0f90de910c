-- rota schema version 23 (SQLite): the HTTP API's request rate limits and
-- failed-authentication budgets, held in the database so every server process counts
-- against the same limit (ADR 0036). One row per key ("rate:<caller>",
-- "auth:source:<address>", "auth:credential:<id>"): a fixed window that starts at the
-- key's first hit after the previous one ended, and the hits counted in it. Each
-- request is one upsert of its key's row; rows whose window has ended are pruned by
-- housekeeping.

CREATE TABLE rota_api_rate_windows (
    key           TEXT PRIMARY KEY,
    window_start  REAL NOT NULL,
    window_end    REAL NOT NULL,
    count         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX rota_api_rate_windows_end ON rota_api_rate_windows (window_end);
