"""Bulk-load a realistic runs table for the HTTP API benchmark, on either store.

Direct SQL, not ``enqueue_many``: a million runs through the public API would take
minutes and give only pending runs. Every NOT NULL column is filled as rota would fill
it: 1% dead-lettered (3 attempts, an error), 2% pending, the rest succeeded (1 attempt,
started and finished); four handlers, four queues; ids and created_at increase together,
one run every 50 ms going back from now; one in ten owned by team-a. Then, on
PostgreSQL, VACUUM (ANALYZE): what stock autovacuum does to a table after a bulk insert
(it sets the visibility map the overview's index-only count relies on: 116 ms over a
never-vacuumed table, 15 ms after); SQLite has no such state, only ANALYZE.
"""

from __future__ import annotations

import sqlite3

import psycopg

HANDLERS = ("send-report", "export-csv", "flaky", "long-etl")
QUEUES = ("default", "reports", "etl", "critical")
# state by id: every 100th dead-lettered, every 50th (offset 1) pending, else succeeded.
_STATE = (
    "CASE WHEN i % 100 = 0 THEN 'dead_lettered' WHEN i % 50 = 1 THEN 'pending' ELSE 'succeeded' END"
)

PG_LOAD_SQL = f"""
INSERT INTO rota_runs (id, namespace, handler, queue, state, payload, priority, run_at,
    sort_at, attempt, max_attempts, fence, timeout_seconds, worker_id, error,
    cancel_requested, lost_count, created_at, started_at, finished_at, owner)
SELECT i, 'default',
       (ARRAY{list(HANDLERS)})[1 + i %% 4],
       (ARRAY{list(QUEUES)})[1 + (i / 4) %% 4],
       st, jsonb_build_object('i', i), 5, t, t,
       CASE st WHEN 'dead_lettered' THEN 3 WHEN 'pending' THEN 0 ELSE 1 END,
       3,
       CASE st WHEN 'dead_lettered' THEN 3 WHEN 'pending' THEN 0 ELSE 1 END,
       30,
       CASE st WHEN 'pending' THEN NULL ELSE 'bench-node-' || (i %% 3) END,
       CASE st WHEN 'dead_lettered' THEN 'ConnectionError: upstream said no' END,
       false, 0, t,
       CASE st WHEN 'pending' THEN NULL ELSE t + interval '10 ms' END,
       CASE st WHEN 'pending' THEN NULL ELSE t + interval '60 ms' END,
       CASE WHEN i %% 10 = 0 THEN 'team-a' END
FROM (SELECT i, {_STATE.replace("%", "%%")} AS st,
             now() - make_interval(secs => (%(n)s - i) * 0.05) AS t
      FROM generate_series(1, %(n)s) AS i) AS s
"""

# SQLite's reads see one view of two tables (ADR 0027): each run goes to its home
# ({{home}}: rota_runs_live for the pending, rota_runs_history for the rest).
SQLITE_LOAD_SQL = f"""
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < :n),
s AS (SELECT i, {_STATE} AS st, :now - (:n - i) * 0.05 AS t FROM seq)
INSERT INTO {{home}} (id, namespace, handler, queue, state, payload, priority, run_at,
    sort_at, attempt, max_attempts, fence, timeout_seconds, worker_id, error,
    cancel_requested, lost_count, created_at, started_at, finished_at, owner)
SELECT i, 'default',
       CASE i % 4 {" ".join(f"WHEN {k} THEN '{h}'" for k, h in enumerate(HANDLERS))} END,
       CASE (i / 4) % 4 {" ".join(f"WHEN {k} THEN '{q}'" for k, q in enumerate(QUEUES))} END,
       st, json_object('i', i), 5, t, t,
       CASE st WHEN 'dead_lettered' THEN 3 WHEN 'pending' THEN 0 ELSE 1 END,
       3,
       CASE st WHEN 'dead_lettered' THEN 3 WHEN 'pending' THEN 0 ELSE 1 END,
       30,
       CASE st WHEN 'pending' THEN NULL ELSE 'bench-node-' || (i % 3) END,
       CASE st WHEN 'dead_lettered' THEN 'ConnectionError: upstream said no' END,
       0, 0, t,
       CASE st WHEN 'pending' THEN NULL ELSE t + 0.01 END,
       CASE st WHEN 'pending' THEN NULL ELSE t + 0.06 END,
       CASE WHEN i % 10 = 0 THEN 'team-a' END
FROM s WHERE (st = 'pending') = :live
"""


def load_postgres(url: str, rows: int) -> None:
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(PG_LOAD_SQL, {"n": rows})
        conn.execute("SELECT setval('rota_run_id_seq', %s)", (rows,))
        conn.execute("VACUUM (ANALYZE) rota_runs")
        conn.execute("ANALYZE")


def load_sqlite(path: str, rows: int, now: float) -> None:
    conn = sqlite3.connect(path, timeout=30)
    try:
        with conn:
            for home, live in (("rota_runs_live", True), ("rota_runs_history", False)):
                params = {"n": rows, "now": now, "live": live}
                conn.execute(SQLITE_LOAD_SQL.format(home=home), params)
            # New runs take ids above every loaded one, whichever home holds it.
            conn.execute(
                "UPDATE sqlite_sequence SET seq = max(seq, :n) WHERE name = 'rota_runs_live'",
                {"n": rows},
            )
        conn.execute("ANALYZE")
    finally:
        conn.close()
