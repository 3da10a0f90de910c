"""The claim must stay an index range scan as runs pile up: on PostgreSQL as finished
runs accumulate, on SQLite whatever statistics PRAGMA optimize last recorded."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import psycopg
import pytest

from rota.store.port import ClaimRequest
from rota.store.postgres import PostgresStore
from rota.store.postgres.session import Q as SENT
from rota.store.queries import load_queries
from rota.store.sqlite import SqliteStore, path_from_url
from rota.store.sqlite.codec import statements
from tests.conftest import fresh_database

from .support import T0, at, new_run

pytestmark = pytest.mark.timeout(60)


async def _claim_plans(conn: psycopg.AsyncConnection[Any], tags: list[str]) -> list[str]:
    """The plans of the statement inside rota_claim, as auto_explain logs them, for a
    claim at the database clock and one at a given instant (tests pass an instant)."""
    plans: list[str] = []
    conn.add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
    claim = load_queries("postgres")["claim"]
    for now in (None, T0):
        params = {
            "queues": ["default", "emails"],
            "limit": 10,
            "worker_id": "worker-1",
            "lease_seconds": 30.0,
            "tags": tags,
            "limited_handlers": [],
            "now": now,
        }
        async with conn.transaction(force_rollback=True):
            await conn.execute(claim, params)
    return [plan for plan in plans if "rota_runs_live" in plan]


@pytest.mark.postgres
async def test_claim_uses_the_claimable_index(pg_clean: str) -> None:
    """The claim's plan is kept for the session (ADR 0030): it must walk the claimable
    index in order and update by address whatever the statistics said when it was
    made (here an empty queue) and whatever the filters."""
    async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
        await conn.execute("LOAD 'auto_explain'")
        await conn.execute("SET auto_explain.log_min_duration = 0")
        await conn.execute("SET auto_explain.log_nested_statements = on")
        await conn.execute("SET client_min_messages = log")
        await conn.execute("ANALYZE rota_runs")
        first = await _claim_plans(conn, tags=[])  # planned while the queue is empty
        store = PostgresStore(pg_clean)
        await store.open()
        try:
            await store.enqueue(
                [new_run(payload=json.dumps({"i": i}), priority=1 + i % 10) for i in range(4000)],
                T0,
            )
        finally:
            await store.close()
        await conn.execute(
            "UPDATE rota_runs SET state = 'succeeded', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id <= 2000",
            {"t": T0},
        )
        await conn.execute("ANALYZE rota_runs")
        unfiltered = await _claim_plans(conn, tags=[])
        tagged = await _claim_plans(conn, tags=["gpu"])
    assert len(first) == len(unfiltered) == len(tagged) == 2
    for plan in first + unfiltered + tagged:
        assert "Index Scan using rota_runs_claimable on rota_runs_live" in plan, plan
        assert "Seq Scan on rota_runs" not in plan, plan
        assert "Sort Key: l.sort_at" not in plan, plan  # the index gives the order
        assert "Tid Scan on rota_runs_live r" in plan, plan  # the update, by address
        assert "JIT" not in plan, plan
    # Planned once: the plan keeps its filters' parameters (a generic plan), with tags
    # or without.
    for plan in first + unfiltered + tagged:
        assert "tags <@ $" in plan, plan


def _prepared(name: str, sql: str) -> tuple[str, list[str]]:
    """``PREPARE name AS sql`` with its %(param)s and %(param)b placeholders numbered,
    and the params in the order of their numbers (every param of these queries carries
    a cast)."""
    order: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in order:
            order.append(match.group(1))
        return f"${order.index(match.group(1)) + 1}"

    body = re.sub(r"%\((\w+)\)[sb]", number, sql).replace("%%", "%")
    return f"PREPARE {name} AS {body}", order


@pytest.mark.parametrize("query", ["complete", "complete_judging", "renew", "release"])
async def test_lease_writes_look_runs_up_by_id(pg_clean: str, query: str) -> None:
    """Statistics taken when no run was held (just after a bulk enqueue) must not make
    a lease write scan every held lease per row of its batch (see leases.sql)."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        await store.enqueue([new_run(payload=json.dumps({"i": i})) for i in range(4000)], T0)
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
        await conn.execute("ANALYZE rota_runs")  # nothing held yet
        await conn.execute(
            "UPDATE rota_runs SET state = 'claimed', attempt = 1, fence = 1, worker_id = 'w',"
            " lease_expires_at = %(t)s WHERE id <= 800",
            {"t": T0},
        )
        # Production statements are prepared by psycopg after a few executions, and a
        # prepared statement may then run on a generic plan: check that plan.
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        prepare, order = _prepared("lease_write", load_queries("postgres")[query])
        await conn.execute(prepare)
        values = {
            "now": "NULL",
            "id": "'{" + ",".join(str(i) for i in range(1, 101)) + "}'::bigint[]",
            "fence": "array_fill(1::bigint, ARRAY[100])",
            "state": "array_fill('succeeded'::text, ARRAY[100])",
            "outcome": "array_fill('succeeded'::text, ARRAY[100])",
            "result": "array_fill(NULL::text, ARRAY[100])",
            "error": "array_fill(NULL::text, ARRAY[100])",
            "retry_delay": "array_fill(NULL::float8, ARRAY[100])",
            "lease_seconds": "30",
            "attempt_error": "'released'",
        }
        args = ", ".join(values[name] for name in order)
        cur = await conn.execute(f"EXPLAIN EXECUTE lease_write({args})")
        plan = "\n".join(row[0] for row in await cur.fetchall())
    assert "Index Scan using rota_runs_live_pkey on rota_runs_live r" in plan, plan
    assert "rota_runs_history" not in plan, plan  # the queue's partition only
    assert "rota_runs_leased" not in plan, plan
    if query.startswith("complete"):
        # The answer is read from the updated rows alone: joined to the attempts just
        # inserted (two CTE scans without statistics) it became a batch x batch loop.
        assert "CTE Scan on recorded" not in plan, plan


@pytest.mark.parametrize("size", [1, 8])
async def test_the_completion_is_planned_once_not_on_every_call(size: int) -> None:
    """The worker's completion, as psycopg runs it (prepared after a few calls, auto
    plan mode), must settle on the generic plan. With the breaker guard a parameter,
    that plan kept the breakers' subqueries the common call never runs and looked
    dearer than a plan made for the values, so the server planned every completion
    anew: 0.6 ms a call (queries.py PLANNED_PER_FLAG). A plan made for the values
    also counted a batch of 1 exactly, and looked cheaper again (the batch CTE in
    leases.sql). A database of its own: the choice turns on statistics, and a new
    install's tables have none, as in a drain started after a bulk enqueue."""
    with fresh_database("rota_plan") as url:
        store = PostgresStore(url)
        await store.open()
        try:
            await store.migrate()
            # The bench's drain. With 4,000 runs a batch of 8 was planned generic even
            # before the change; with 20,000 it got 0 generic and 12 custom plans.
            await store.enqueue([new_run() for _ in range(20_000)], T0)
        finally:
            await store.close()
        batch = [
            {"id": i, "fence": 99, "state": "succeeded", "outcome": "succeeded"}
            for i in range(1, size + 1)
        ]  # a stale fence: nothing is written, the plan is all that is asked
        params = {
            "now": None,
            **{key: [item[key] for item in batch] for key in ("id", "fence", "state", "outcome")},
            **{key: [None] * len(batch) for key in ("result", "error", "retry_delay")},
        }
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for _ in range(12):  # the text as the store sends it (queries.py as_sent)
                await conn.execute(SENT["complete"], params, prepare=True)
            cur = await conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            )
            [(generic, custom)] = await cur.fetchall()
    assert custom <= 5, (generic, custom)
    assert generic >= 7, (generic, custom)


async def test_limited_candidates_read_each_partial_index_a_window_deep(pg_clean: str) -> None:
    """The limited claim's candidates are read under the cluster-wide lock: with rated
    runs piled up they must come from a bounded range scan of each partial index (one
    scan with neither concurrency_key condition read every due run, then sorted them).
    A generic plan (plan_cache_mode = force_generic_plan) would not: PostgreSQL's auto
    mode keeps the custom plan, its estimate being far below the generic one's."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        runs = [new_run(payload=json.dumps({"i": i})) for i in range(4000)]
        keyed = [new_run(concurrency_key=f"k{i % 10}", concurrency_limit=5) for i in range(400)]
        await store.enqueue(runs + keyed, T0)
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
        await conn.execute("ANALYZE rota_runs")
        params = {
            "queues": ["default"],
            "tags": [],
            "limited_handlers": ["job"],
            "limited_queues": [],
            "global_limit": False,
            "everything": True,
            "key_counts": True,
            "full_keys": [],
            "full_handlers": [],
            "chosen": [],
            "window": 116,
            "now": at(60),  # every run due
        }
        query = load_queries("postgres")["limited_candidates"]
        cur = await conn.execute("EXPLAIN " + query, params)
        plan = "\n".join(row[0] for row in await cur.fetchall())
    assert "Index Scan using rota_runs_claimable on rota_runs" in plan, plan
    assert "Index Scan using rota_runs_claimable_keyed on rota_runs" in plan, plan
    assert "Seq Scan on rota_runs" not in plan, plan


async def test_a_renewal_after_the_first_can_rewrite_the_run_in_place(pg_clean: str) -> None:
    """No index holds lease_expires_at (migration 11), so a heartbeat of a running run
    may be a HOT update: no new index entry, nothing for VACUUM in the indexes. (Not
    every one: a renewal of every run on a page in one statement needs room for two
    versions of each, and the claim packed them tight; with lease_expires_at indexed,
    none can be.)"""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        await store.enqueue([new_run() for _ in range(20)], T0)
        await store.claim(
            ClaimRequest(worker_id="w", queues=("default",), limit=20, lease_seconds=30.0), T0
        )
    finally:
        await store.close()
    renew = load_queries("postgres")["renew"]
    params = {"id": list(range(1, 21)), "fence": [1] * 20, "lease_seconds": 30.0, "now": None}
    counts = "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables"
    counts += " WHERE relname = 'rota_runs_live'"  # the queue's partition
    async with await psycopg.AsyncConnection.connect(pg_clean) as conn:
        assert len(await (await conn.execute(renew, params)).fetchall()) == 20  # -> running
        await conn.commit()
        # Its own transaction, as every heartbeat is. The counters may hold earlier
        # transactions' counts until they are flushed, never during a transaction: so
        # the difference inside this one is this renewal's.
        before = await (await conn.execute(counts)).fetchone()
        assert len(await (await conn.execute(renew, params)).fetchall()) == 20
        after = await (await conn.execute(counts)).fetchone()
        await conn.rollback()
    assert before is not None
    assert after is not None
    assert after[0] - before[0] == 20  # every run renewed ...
    assert after[1] - before[1] > 0  # ... and some in place


# SQLite's two homes (migration 19): reads name the view rota_runs, plans the tables.
LIVE, HISTORY = "rota_runs_live", "rota_runs_history"


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
        "everything": 0,
        "key_counts": 1,
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
            assert not any(step.split()[:2] == ["SCAN", "r"] for step in plan), (name, plan)
        # The idle poll's question for keyed runs, and a completion's "which of these
        # are workflow steps": neither may walk an index over every run.
        for name, expected in (
            ("anything_due", f"SEARCH {LIVE} USING INDEX rota_runs_claimable_keyed (queue=?)"),
            ("has_keyed_work", f"SEARCH {LIVE} USING INDEX rota_runs_claimable_keyed (queue=?)"),
            ("workflow_steps_of", f"SEARCH {LIVE} USING INTEGER PRIMARY KEY (rowid=?)"),
            ("workflow_steps_of", f"SEARCH {HISTORY} USING INTEGER PRIMARY KEY (rowid=?)"),
        ):
            query = "EXPLAIN QUERY PLAN " + queries[name]
            plan = [row[3] for row in conn.execute(query, {**params, "ids": "[1, 2]"})]
            assert expected in plan, (name, plan)


@pytest.mark.parametrize("query", ["complete", "complete_judging", "renew", "append_logs"])
async def test_sqlite_lease_writes_walk_the_batch_and_reach_runs_by_rowid(
    sqlite_url: str, query: str
) -> None:
    """The set-based lease writes (the batch as one JSON array, leases.sql) must walk
    the batch and find each run by rowid, whatever statistics PRAGMA optimize recorded:
    driven from rota_runs or one of its state indexes instead, a batch of 100 would
    scan every held lease (or every run) once per item."""
    store = SqliteStore(sqlite_url)
    await store.open()
    try:
        await store.migrate()
        await store.enqueue([new_run() for _ in range(2000)], T0)
        await store.claim(
            ClaimRequest(worker_id="w", queues=("default",), limit=3, lease_seconds=30.0), T0
        )
    finally:
        await store.close()
    with sqlite3.connect(path_from_url(sqlite_url)) as conn:
        conn.execute("ANALYZE")  # few runs held: the leased index looks selective
        items = json.dumps([{"id": i, "fence": 1} for i in range(1, 101)])
        params = {"items": items, "now": T0.timestamp(), "lease_seconds": 30.0}
        for statement in statements(load_queries("sqlite")[query] + ";"):
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement, params)]
            if not any("rota_runs" in step or step.split()[:2] == ["SCAN", "r"] for step in plan):
                continue  # the outbox's guard alone, say
            assert any(
                step.startswith("SEARCH") and "INTEGER PRIMARY KEY (rowid=?)" in step
                for step in plan
            ), (query, statement[:60], plan)
            assert not any(
                step.startswith("SCAN rota_runs")
                or step.split()[:2] == ["SCAN", "r"]
                or "USING INDEX rota_runs_" in step
                for step in plan
            ), (query, statement[:60], plan)
            # The batch is the outer loop: its scan comes before the runs' lookups.
            batch = next(i for i, step in enumerate(plan) if "VIRTUAL TABLE" in step)
            lookup = next(i for i, step in enumerate(plan) if "(rowid=?)" in step)
            assert batch < lookup, (query, statement[:60], plan)
