"""A day of finished runs in rota's PostgreSQL history, as retention will find it: one
day partition of ``rota_runs_history`` holding N succeeded runs, each with its attempt
row and two log lines, loaded by direct SQL (a million runs through the public API
would take minutes).

Which day: yesterday (UTC), not a day ahead. Retention drops every partition that ends
before its cut-off, the earliest first, and a fresh install's first partition
(``rota_runs_history_upto_<tomorrow>``, from MINVALUE) holds today, where a drain beside
the drop writes its finished runs. Dropping a future day would drop that partition too,
and its DROP would hold history's lock while the loaded day's rows go (a stall no
deployment sees: there the oldest day goes alone). So the install's first partition,
still empty, is retired first; yesterday and today then get day partitions of their own
(rota_make_history_days, which also makes what a day needs beside it), and the measured
call retires yesterday alone while the drain writes into today.

Only rota's SQL functions and INSERTs through the parent tables (rota_runs,
rota_attempts, rota_run_logs) are used, so the loader works whatever those tables are
partitioned by. Run ids are 1..N; the sequence is moved past them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_start

import psycopg

# Every id of the day, with its instant: spread over the day, first at midnight UTC.
_DAY_ROWS = """
SELECT i, %(midnight)s::timestamptz + make_interval(secs => (i - 1) * 86000.0 / %(n)s) AS t
FROM generate_series(1, %(n)s) AS i
"""
# Every NOT NULL column filled as a worker leaves a succeeded no-op run (see
# bench.api_load for the full set of states).
RUNS_SQL = f"""
INSERT INTO rota_runs (id, namespace, handler, queue, state, payload, priority, run_at,
    sort_at, attempt, max_attempts, fence, timeout_seconds, worker_id, cancel_requested,
    lost_count, created_at, started_at, finished_at)
SELECT i, 'default', 'noop', 'default', 'succeeded', jsonb_build_object('i', i), 5, t, t,
       1, 3, 1, 30, 'bench-node-' || (i %% 3), false, 0,
       t, t + interval '10 ms', t + interval '60 ms'
FROM ({_DAY_ROWS}) AS day_rows
"""
ATTEMPTS_SQL = f"""
INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at, outcome)
SELECT i, 1, 1, 'bench-node-' || (i %% 3), t + interval '10 ms', t + interval '60 ms',
       'succeeded'
FROM ({_DAY_ROWS}) AS day_rows
"""
# Two lines a run, as a handler that says what it did leaves them.
LOGS_SQL = f"""
INSERT INTO rota_run_logs (run_id, attempt, at, level, message, fields)
SELECT i, 1, t + make_interval(secs => 0.02 * line), 'info', message, '{{}}'::jsonb
FROM ({_DAY_ROWS}) AS day_rows,
     (VALUES (1, 'export started'), (2, 'export wrote 1,000 rows')) AS lines(line, message)
"""


@dataclass(frozen=True)
class HistoryDay:
    day: date  # the UTC day the runs finished in
    runs: int  # ids 1..runs
    load_s: float  # INSERTs and VACUUM ANALYZE, wall clock

    @property
    def ends(self) -> datetime:
        """The day's end: the cut-off that retires it (and nothing after it)."""
        return datetime.combine(self.day + timedelta(days=1), day_start(), tzinfo=UTC)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, day_start(), tzinfo=UTC)


def load_history_day(url: str, runs: int) -> HistoryDay:
    """Lay out history as described above and fill yesterday with ``runs`` runs."""
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT (now() AT TIME ZONE 'UTC')::date").fetchone()
        today: date = row[0] if row else datetime.now(UTC).date()
        yesterday = today - timedelta(days=1)
        started = time.perf_counter()
        # The install's first partition ends at tomorrow's midnight; it is empty.
        retired = conn.execute(
            "SELECT rota_retire_history(%s)", (_midnight(today + timedelta(days=1)),)
        ).fetchone()
        if retired is None or retired[0] != 0:
            raise RuntimeError(f"retiring the empty install partition retired {retired}")
        conn.execute("SELECT rota_make_history_days(%s, 2)", (yesterday,))
        params = {"n": runs, "midnight": _midnight(yesterday)}
        for sql in (RUNS_SQL, ATTEMPTS_SQL, LOGS_SQL):
            conn.execute(sql, params)
        conn.execute("SELECT setval('rota_run_id_seq', %s)", (runs,))
        # What autovacuum would have done to a day-old table long before it is retired
        # (it is off on the bench's server): visibility map set, statistics there.
        conn.execute("VACUUM (ANALYZE)")
        return HistoryDay(yesterday, runs, round(time.perf_counter() - started, 2))
