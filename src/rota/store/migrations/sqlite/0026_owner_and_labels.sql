-- rota schema version 26 (SQLite): a run's owner and labels (issue 29, ADR 0037).
-- The owner is short text; the labels a JSON object of strings, NULL for none. Both
-- homes get the columns in the same order: the trigger that moves a finished run copies
-- it with SELECT * (migration 19). No index: a listing filtered by owner or label scans
-- within the listing's own order (id, newest first) until its page is full (ADR 0037).
-- A job's owner and labels live in its spec (JSON), as its other options do.

ALTER TABLE rota_runs_live ADD COLUMN owner TEXT;
ALTER TABLE rota_runs_live ADD COLUMN labels TEXT;
ALTER TABLE rota_runs_history ADD COLUMN owner TEXT;
ALTER TABLE rota_runs_history ADD COLUMN labels TEXT;
