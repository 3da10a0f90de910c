-- rota schema version 15 (SQLite): dashboard sessions that were signed out (ADR 0014).
-- A session is a signed cookie; signing out writes its id here until the cookie would
-- have expired, and every server process refuses a cookie whose id is here (a primary
-- key read per request). Each sign-out prunes the rows past their expiry.

CREATE TABLE rota_signed_out_sessions (
    session_id  TEXT PRIMARY KEY,
    expires_at  REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX rota_signed_out_sessions_expiry ON rota_signed_out_sessions (expires_at);
