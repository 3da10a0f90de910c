-- rota schema version 28 (PostgreSQL): the charts' rollup keeps one row per bucket,
-- namespace, queue and handler, with a count per final state in columns (issue 29 item
-- 4, docs/benchmarks-by-hand.md "folded"). Migration 25 kept a row per final state,
-- so a read summed up to four rows (succeeded, failed, dead-lettered, cancelled) where
-- one carries the same; the pickup delays were never read per state.
-- finished counts every final state (skipped too); succeeded ... cancelled the states
-- the charts draw; the delay columns are as in migration 25, over all states.
--
-- The rows already counted are carried over, summed per bucket and key: a rollup's
-- rows are bounded (25 hours of minutes, 8 days of hours) while a recount from history
-- could only count what history still keeps (its retention may be shorter than the
-- 8 days of hours), so counted_until stays where it is.

ALTER TABLE rota_chart_minutes RENAME TO rota_chart_minutes_by_state;
ALTER TABLE rota_chart_minutes_by_state
    RENAME CONSTRAINT rota_chart_minutes_pkey TO rota_chart_minutes_by_state_pkey;

CREATE TABLE rota_chart_minutes (
    minute        timestamptz NOT NULL,
    namespace     text NOT NULL,
    queue         text NOT NULL,
    handler       text NOT NULL,
    finished      bigint NOT NULL,  -- every final state
    succeeded     bigint NOT NULL,
    failed        bigint NOT NULL,
    timed_out     bigint NOT NULL,
    dead_lettered bigint NOT NULL,
    cancelled     bigint NOT NULL,
    waited_sum    double precision NOT NULL,  -- seconds, of the runs that started
    waited_100ms  bigint NOT NULL,  -- pickup delay <= 0.1 s
    waited_1s     bigint NOT NULL,  -- (0.1 s, 1 s]
    waited_10s    bigint NOT NULL,  -- (1 s, 10 s]
    waited_1m     bigint NOT NULL,  -- (10 s, 60 s]
    waited_10m    bigint NOT NULL,  -- (60 s, 600 s]
    waited_more   bigint NOT NULL,  -- > 600 s
    PRIMARY KEY (minute, namespace, queue, handler)
);

INSERT INTO rota_chart_minutes (
    minute, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT minute, namespace, queue, handler, sum(count),
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'failed' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'timed_out' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'dead_lettered' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'cancelled' THEN count ELSE 0 END),
       sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s), sum(waited_1m),
       sum(waited_10m), sum(waited_more)
FROM rota_chart_minutes_by_state
GROUP BY minute, namespace, queue, handler;

DROP TABLE rota_chart_minutes_by_state;

ALTER TABLE rota_chart_quarters RENAME TO rota_chart_quarters_by_state;
ALTER TABLE rota_chart_quarters_by_state
    RENAME CONSTRAINT rota_chart_quarters_pkey TO rota_chart_quarters_by_state_pkey;

CREATE TABLE rota_chart_quarters (
    quarter       timestamptz NOT NULL,
    namespace     text NOT NULL,
    queue         text NOT NULL,
    handler       text NOT NULL,
    finished      bigint NOT NULL,  -- every final state
    succeeded     bigint NOT NULL,
    failed        bigint NOT NULL,
    timed_out     bigint NOT NULL,
    dead_lettered bigint NOT NULL,
    cancelled     bigint NOT NULL,
    waited_sum    double precision NOT NULL,  -- seconds, of the runs that started
    waited_100ms  bigint NOT NULL,  -- pickup delay <= 0.1 s
    waited_1s     bigint NOT NULL,  -- (0.1 s, 1 s]
    waited_10s    bigint NOT NULL,  -- (1 s, 10 s]
    waited_1m     bigint NOT NULL,  -- (10 s, 60 s]
    waited_10m    bigint NOT NULL,  -- (60 s, 600 s]
    waited_more   bigint NOT NULL,  -- > 600 s
    PRIMARY KEY (quarter, namespace, queue, handler)
);

INSERT INTO rota_chart_quarters (
    quarter, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT quarter, namespace, queue, handler, sum(count),
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'failed' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'timed_out' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'dead_lettered' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'cancelled' THEN count ELSE 0 END),
       sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s), sum(waited_1m),
       sum(waited_10m), sum(waited_more)
FROM rota_chart_quarters_by_state
GROUP BY quarter, namespace, queue, handler;

DROP TABLE rota_chart_quarters_by_state;

ALTER TABLE rota_chart_hours RENAME TO rota_chart_hours_by_state;
ALTER TABLE rota_chart_hours_by_state
    RENAME CONSTRAINT rota_chart_hours_pkey TO rota_chart_hours_by_state_pkey;

CREATE TABLE rota_chart_hours (
    hour          timestamptz NOT NULL,
    namespace     text NOT NULL,
    queue         text NOT NULL,
    handler       text NOT NULL,
    finished      bigint NOT NULL,  -- every final state
    succeeded     bigint NOT NULL,
    failed        bigint NOT NULL,
    timed_out     bigint NOT NULL,
    dead_lettered bigint NOT NULL,
    cancelled     bigint NOT NULL,
    waited_sum    double precision NOT NULL,  -- seconds, of the runs that started
    waited_100ms  bigint NOT NULL,  -- pickup delay <= 0.1 s
    waited_1s     bigint NOT NULL,  -- (0.1 s, 1 s]
    waited_10s    bigint NOT NULL,  -- (1 s, 10 s]
    waited_1m     bigint NOT NULL,  -- (10 s, 60 s]
    waited_10m    bigint NOT NULL,  -- (60 s, 600 s]
    waited_more   bigint NOT NULL,  -- > 600 s
    PRIMARY KEY (hour, namespace, queue, handler)
);

INSERT INTO rota_chart_hours (
    hour, namespace, queue, handler, finished, succeeded, failed, timed_out, dead_lettered,
    cancelled, waited_sum, waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m,
    waited_more)
SELECT hour, namespace, queue, handler, sum(count),
       sum(CASE WHEN state = 'succeeded' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'failed' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'timed_out' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'dead_lettered' THEN count ELSE 0 END),
       sum(CASE WHEN state = 'cancelled' THEN count ELSE 0 END),
       sum(waited_sum), sum(waited_100ms), sum(waited_1s), sum(waited_10s), sum(waited_1m),
       sum(waited_10m), sum(waited_more)
FROM rota_chart_hours_by_state
GROUP BY hour, namespace, queue, handler;

DROP TABLE rota_chart_hours_by_state;
