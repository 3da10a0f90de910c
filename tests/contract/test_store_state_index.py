"""PostgreSQL's state index leaves out held runs (migration 19, ADR 0025): a claim and a
first renewal add no entry to it. The reads it served must still find their index:
held runs through rota_runs_leased, everything else through rota_runs_state_id."""

from __future__ import annotations

import psycopg
import pytest

from rota.domain.runs import RunFilter
from rota.domain.states import RunState
from rota.store.port import ClaimRequest
from rota.store.postgres import PostgresStore
from rota.store.queries import load_queries

from .support import T0, new_run

pytestmark = [pytest.mark.timeout(60), pytest.mark.postgres]

RUNS = 4000
HELD = 40


async def _mixed_table(url: str) -> None:
    """Many finished runs, a backlog, a few dead letters and a few held runs, analysed."""
    store = PostgresStore(url)
    await store.open()
    try:
        await store.enqueue([new_run() for _ in range(RUNS)], T0)
        claimed = await store.claim(
            ClaimRequest(worker_id="w", queues=("default",), limit=HELD, lease_seconds=30.0), T0
        )
        assert len(claimed) == HELD
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE rota_runs SET state = 'succeeded', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id > %(held)s AND id <= 2000",
            {"t": T0, "held": HELD},
        )
        await conn.execute(
            "UPDATE rota_runs SET state = 'dead_lettered', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id > 2000 AND id <= 2020",
            {"t": T0},
        )
        await conn.execute("VACUUM ANALYZE rota_runs")


async def _plan(url: str, query: str, params: dict[str, object]) -> str:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("EXPLAIN " + load_queries("postgres")[query], params)
        return "\n".join(row[0] for row in await cur.fetchall())


async def test_held_runs_have_no_entry_in_the_state_index(pg_clean: str) -> None:
    await _mixed_table(pg_clean)
    async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
        # VACUUM (in _mixed_table) removed dead entries, so it counted each index's
        # live entries: every run is in the primary key, held runs are not in the
        # state index.
        cur = await conn.execute(
            "SELECT relname, reltuples::bigint FROM pg_class"
            " WHERE relname IN ('rota_runs_pkey', 'rota_runs_state_id')"
        )
        entries = dict(await cur.fetchall())
    assert entries == {"rota_runs_pkey": RUNS, "rota_runs_state_id": RUNS - HELD}
    plan = await _plan(pg_clean, "live_queue_counts", {"now": None})
    assert "Index Only Scan using rota_runs_state_id on rota_runs" in plan, plan
    assert "rota_runs_leased" in plan, plan
    assert "Seq Scan on rota_runs" not in plan, plan


@pytest.mark.parametrize(
    ("state", "index"),
    [
        (RunState.RUNNING, "rota_runs_leased"),
        (RunState.CLAIMED, "rota_runs_leased"),
        (RunState.DEAD_LETTERED, "rota_runs_state_id"),
        (RunState.SUCCEEDED, "rota_runs_state_id"),
    ],
)
async def test_a_listing_by_state_reads_an_index(
    pg_clean: str, state: RunState, index: str
) -> None:
    await _mixed_table(pg_clean)
    params = {"state": state.value, "handler": None, "queue": None, "before_id": None}
    plan = await _plan(pg_clean, "list_runs", {**params, "limit": 50})
    assert index in plan, plan
    assert "Seq Scan on rota_runs" not in plan, plan
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        listed = await store.list_runs(RunFilter(state=state, limit=50))
    finally:
        await store.close()
    expected = {RunState.CLAIMED: HELD, RunState.DEAD_LETTERED: 20, RunState.SUCCEEDED: 50}
    assert len(listed) == expected.get(state, 0)
    assert all(run.state is state for run in listed)
