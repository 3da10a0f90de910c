-- rota schema version 33 (SQLite): one count of finished runs per minute, read by the
-- charts and by the overview's and queues' finished counts, as on PostgreSQL (its
-- migration 33 says why). counted_from is NULL until the leader's next count.
DROP TABLE rota_finished_minutes;
DROP TABLE rota_finished_rollup;
ALTER TABLE rota_chart_rollup ADD COLUMN counted_from REAL;
