-- rota schema version 25 (SQLite): the charts' rollup (issue 29, DESIGN.md "The
-- dashboard", Charts). The leader counts finished runs per minute, namespace, queue,
-- handler and final state, with their pickup delays (started_at - run_at: a sum and
-- how many fell in each fixed bucket, so p50 and p99 can be estimated), and sums the
-- minutes per hour and per quarter-hour. Minutes (the 1 h chart) and quarter-hours
-- (the 24 h chart) are kept 25 hours, hours (the 7 d chart) 8 days.
-- rota_chart_rollup.counted_until: every minute before it is counted.

CREATE TABLE rota_chart_minutes (
    minute        REAL NOT NULL,
    namespace     TEXT NOT NULL,
    queue         TEXT NOT NULL,
    handler       TEXT NOT NULL,
    state         TEXT NOT NULL,
    count         INTEGER NOT NULL,
    waited_sum    REAL NOT NULL,     -- seconds, of the runs that started
    waited_100ms  INTEGER NOT NULL,  -- pickup delay <= 0.1 s
    waited_1s     INTEGER NOT NULL,  -- (0.1 s, 1 s]
    waited_10s    INTEGER NOT NULL,  -- (1 s, 10 s]
    waited_1m     INTEGER NOT NULL,  -- (10 s, 60 s]
    waited_10m    INTEGER NOT NULL,  -- (60 s, 600 s]
    waited_more   INTEGER NOT NULL,  -- > 600 s
    PRIMARY KEY (minute, namespace, queue, handler, state)
) WITHOUT ROWID;

CREATE TABLE rota_chart_hours (
    hour          REAL NOT NULL,
    namespace     TEXT NOT NULL,
    queue         TEXT NOT NULL,
    handler       TEXT NOT NULL,
    state         TEXT NOT NULL,
    count         INTEGER NOT NULL,
    waited_sum    REAL NOT NULL,
    waited_100ms  INTEGER NOT NULL,
    waited_1s     INTEGER NOT NULL,
    waited_10s    INTEGER NOT NULL,
    waited_1m     INTEGER NOT NULL,
    waited_10m    INTEGER NOT NULL,
    waited_more   INTEGER NOT NULL,
    PRIMARY KEY (hour, namespace, queue, handler, state)
) WITHOUT ROWID;

CREATE TABLE rota_chart_quarters (
    quarter       REAL NOT NULL,
    namespace     TEXT NOT NULL,
    queue         TEXT NOT NULL,
    handler       TEXT NOT NULL,
    state         TEXT NOT NULL,
    count         INTEGER NOT NULL,
    waited_sum    REAL NOT NULL,
    waited_100ms  INTEGER NOT NULL,
    waited_1s     INTEGER NOT NULL,
    waited_10s    INTEGER NOT NULL,
    waited_1m     INTEGER NOT NULL,
    waited_10m    INTEGER NOT NULL,
    waited_more   INTEGER NOT NULL,
    PRIMARY KEY (quarter, namespace, queue, handler, state)
) WITHOUT ROWID;

CREATE TABLE rota_chart_rollup (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    counted_until  REAL NOT NULL
);
