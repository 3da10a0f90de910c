-- rota schema version 26 (PostgreSQL): a run's owner and labels (issue 29, ADR 0037).
-- The owner is short text; the labels a jsonb object of strings, NULL for none. Added
-- to the partitioned parent, so every partition (the queue, history and its days) has
-- them; nullable without a default, so adding them rewrites nothing. No index on the
-- queue (the claim and the completion write none, issue 24); a listing filtered by owner
-- or label scans within the listing's own order (ADR 0037).
-- A job's owner and labels live in its spec (jsonb), as its other options do.

ALTER TABLE rota_runs ADD COLUMN owner text, ADD COLUMN labels jsonb;
