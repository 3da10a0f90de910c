-- rota schema version 14 (postgres): one row of the start log per (bucket, claim) with
-- its number of starts, instead of one row per start (ADR 0016 addendum). Every start
-- of one claim shares the claim's instant, so the sliding-window check is unchanged
-- while the log a claim reads, prunes and writes shrinks from up to N rows per bucket
-- to one per claim in the window. Existing rows are one start each.
ALTER TABLE rota_rate_starts ADD COLUMN starts integer NOT NULL DEFAULT 1;
