-- rota schema version 33: one count of finished runs per minute, read by the charts and
-- by the overview's and queues' finished counts (ADR 0014 addendum). The leader used to
-- count every finished run twice a minute, once into rota_finished_minutes (per state)
-- and once into rota_chart_minutes (per handler, a column per state); each read the last
-- minute's runs under one snapshot, and at 20k runs/s each slowed a drain beside it for
-- a few seconds of every minute. The chart rollup now answers both, summed over
-- handlers; counted_from says from which minute on its minutes are all counted and kept
-- (NULL until the leader's next count: until then the overview counts runs).
DROP TABLE rota_finished_minutes;
DROP TABLE rota_finished_rollup;
ALTER TABLE rota_chart_rollup ADD COLUMN counted_from timestamptz;
