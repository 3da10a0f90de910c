"""The claim must stay an index range scan as runs pile up: on PostgreSQL as finished
runs accumulate, on SQLite whatever statistics PRAGMA optimize last recorded."""

from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest

from rota.store.postgres import PostgresStore
from rota.store.queries import load_queries
from rota.store.sqlite import SqliteStore, path_from_url

from .support import T0, new_run

pytestmark = pytest.mark.timeout(60)


@pytest.mark.postgres
async def test_claim_uses_the_claimable_index(pg_clean: str) -> None:
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        await store.enqueue(
            [new_run(payload=json.dumps({"i": i}), priority=1 + i % 10) for i in range(4000)],
            T0,
        )
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
        await conn.execute(
            "UPDATE rota_runs SET state = 'succeeded', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id <= 2000",
            {"t": T0},
        )
        await conn.execute("ANALYZE rota_runs")
        claim = load_queries("postgres")["claim"]
        plans = []
        # Production passes now=None (the database clock); tests pass an instant.
        for now in (None, T0):
            params = {
                "queues": ["default", "emails"],
                "limit": 10,
                "worker_id": "worker-1",
                "lease_seconds": 30.0,
                "tags": [],
                "limited_handlers": [],
                "now": now,
            }
            cur = await conn.execute("EXPLAIN " + claim, params)
            plans.append("\n".join(row[0] for row in await cur.fetchall()))
    for plan in plans:
        assert "Index Scan using rota_runs_claimable on rota_runs" in plan, plan
        assert "Seq Scan on rota_runs" not in plan, plan


async def test_sqlite_claim_reaches_runs_by_rowid_after_stale_statistics(sqlite_url: str) -> None:
    """The housekeeping's PRAGMA optimize on a table of three rows recorded statistics
    under which SQLite scanned every row of rota_runs per claim once the table grew
    (26 ms a claim at 3,000 pending runs; docs/benchmarks.md (m)). The claim's
    queries must keep the per-queue index lists and reach rows by rowid."""
    store = SqliteStore(sqlite_url)
    await store.open()
    try:
        await store.migrate()
        await store.enqueue([new_run() for _ in range(3)], T0)
    finally:
        await store.close()
    with sqlite3.connect(path_from_url(sqlite_url)) as conn:
        conn.execute("ANALYZE")  # what PRAGMA optimize records after the first claims
    store = SqliteStore(sqlite_url)
    await store.open()
    try:
        await store.enqueue([new_run() for _ in range(2000)], T0)
    finally:
        await store.close()
    queries = load_queries("sqlite")
    params = {
        "queues": '["default"]',
        "limit": 10,
        "window": 10,
        "worker_id": "worker-1",
        "lease_seconds": 30.0,
        "tags": "[]",
        "limited_handlers": "[]",
        "limited_queues": "[]",
        "global_limit": 0,
        "full_keys": "[]",
        "full_handlers": "[]",
        "chosen": "[]",
        "now": T0.timestamp(),
    }
    with sqlite3.connect(path_from_url(sqlite_url)) as conn:
        stats = conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'rota_runs_claimable'")
        assert stats.fetchone() is not None, "the stale statistics this test needs are missing"
        for name in ("claim", "limited_candidates"):
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + queries[name], params)]
            assert "SEARCH r USING INTEGER PRIMARY KEY (rowid=?)" in plan, (name, plan)
            assert not any(step.startswith("SCAN r") for step in plan), (name, plan)
        # The idle poll's question for keyed runs, and a completion's "which of these
        # are workflow steps": neither may walk an index over every run.
        for name, expected in (
            ("anything_due", "SEARCH rota_runs USING INDEX rota_runs_claimable_keyed (queue=?)"),
            ("has_keyed_work", "SEARCH rota_runs USING INDEX rota_runs_claimable_keyed (queue=?)"),
            ("workflow_steps_of", "SEARCH rota_runs USING INTEGER PRIMARY KEY (rowid=?)"),
        ):
            query = "EXPLAIN QUERY PLAN " + queries[name]
            plan = [row[3] for row in conn.execute(query, {**params, "ids": "[1, 2]"})]
            assert expected in plan, (name, plan)
