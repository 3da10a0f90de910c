-- rota schema version 32: history's first partition keeps one index on id, not two.
-- Migration 20 made the old runs table the first partition of history with its primary
-- key (rota_runs_before_v20_pkey); history's own index on id then gave that partition a
-- second index on the same column. Every run that finished before the database's first
-- day partition (all of a fresh install's first day) wrote both. Nothing needs the
-- primary key: history's ids come from the run sequence, and no statement names it (an
-- ON CONFLICT on a partitioned table would need the partition key in the index too).
-- Dropping an index is instant whatever the partition holds.
DO $$
DECLARE
    holder regclass;
BEGIN
    SELECT conrelid::regclass INTO holder
    FROM pg_constraint WHERE conname = 'rota_runs_before_v20_pkey';
    IF holder IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT rota_runs_before_v20_pkey', holder);
    END IF;
END
$$;
