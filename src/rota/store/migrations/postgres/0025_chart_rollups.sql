-- rota schema version 25 (PostgreSQL): the charts' rollup (issue 29, DESIGN.md "The
-- dashboard", Charts). The leader counts finished runs per minute, namespace, queue,
-- handler and final state, with their pickup delays (started_at - run_at: a sum and
-- how many fell in each fixed bucket, so p50 and p99 can be estimated), and sums the
-- minutes per hour and per quarter-hour. Minutes (the 1 h chart) and quarter-hours
-- (the 24 h chart) are kept 25 hours, hours (the 7 d chart) 8 days.
-- rota_chart_rollup.counted_until: every minute before it is counted.

CREATE TABLE rota_chart_minutes (
    minute        timestamptz NOT NULL,
    namespace     text NOT NULL,
    queue         text NOT NULL,
    handler       text NOT NULL,
    state         text NOT NULL,
    count         bigint NOT NULL,
    waited_sum    double precision NOT NULL,  -- seconds, of the runs that started
    waited_100ms  bigint NOT NULL,  -- pickup delay <= 0.1 s
    waited_1s     bigint NOT NULL,  -- (0.1 s, 1 s]
    waited_10s    bigint NOT NULL,  -- (1 s, 10 s]
    waited_1m     bigint NOT NULL,  -- (10 s, 60 s]
    waited_10m    bigint NOT NULL,  -- (60 s, 600 s]
    waited_more   bigint NOT NULL,  -- > 600 s
    PRIMARY KEY (minute, namespace, queue, handler, state)
);

CREATE TABLE rota_chart_hours (
    hour          timestamptz NOT NULL,
    namespace     text NOT NULL,
    queue         text NOT NULL,
    handler       text NOT NULL,
    state         text NOT NULL,
    count         bigint NOT NULL,
    waited_sum    double precision NOT NULL,
    waited_100ms  bigint NOT NULL,
    waited_1s     bigint NOT NULL,
    waited_10s    bigint NOT NULL,
    waited_1m     bigint NOT NULL,
    waited_10m    bigint NOT NULL,
    waited_more   bigint NOT NULL,
    PRIMARY KEY (hour, namespace, queue, handler, state)
);

CREATE TABLE rota_chart_quarters (
    quarter       timestamptz NOT NULL,
    namespace     text NOT NULL,
    queue         text NOT NULL,
    handler       text NOT NULL,
    state         text NOT NULL,
    count         bigint NOT NULL,
    waited_sum    double precision NOT NULL,
    waited_100ms  bigint NOT NULL,
    waited_1s     bigint NOT NULL,
    waited_10s    bigint NOT NULL,
    waited_1m     bigint NOT NULL,
    waited_10m    bigint NOT NULL,
    waited_more   bigint NOT NULL,
    PRIMARY KEY (quarter, namespace, queue, handler, state)
);

CREATE TABLE rota_chart_rollup (
    id             integer PRIMARY KEY CHECK (id = 1),
    counted_until  timestamptz NOT NULL
);
