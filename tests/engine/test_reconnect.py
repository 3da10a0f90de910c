"""PostgreSQL: a worker whose connections are cut mid-flight reconnects and carries on,
losing and duplicating no outcome."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

import rota
from rota.domain.runs import RunFilter
from rota.domain.states import AttemptOutcome, RunState
from rota.errors import StoreUnavailable
from rota.store.postgres import PostgresStore, pool
from tests.engine.conftest import working
from tests.helpers import eventually

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_url(pg_clean: str) -> str:
    return pg_clean


def _cut_connections(url: str) -> int:
    """End every other backend of the database; returns once each has exited (the
    timeout form of pg_terminate_backend waits for that, up to 5 s)."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    assert all(ended for (ended,) in rows), "a backend outlived pg_terminate_backend"
    return len(rows)


async def test_connections_cut_mid_flight(make_app, db_url):
    app = make_app(lease_seconds=3.0)
    gate = asyncio.Event()

    @app.handler("gated")
    async def gated(ctx: rota.RunContext, payload: dict) -> int:
        await gate.wait()
        return payload["n"]

    store = await app.store()
    run_ids = await app.enqueue_many_async(
        [{"handler": "gated", "payload": {"n": n}} for n in range(20)]
    )
    async with working(app, concurrency=20):

        async def all_started():
            runs = await store.list_runs(RunFilter(limit=100))
            return all(r.state.is_active for r in runs)

        await eventually(all_started, what="all runs to be claimed")
        assert _cut_connections(db_url) >= 1
        gate.set()

        async def all_done():
            try:
                runs = await store.list_runs(RunFilter(state=RunState.SUCCEEDED, limit=100))
            except StoreUnavailable:  # our own pooled connections were cut too
                return False
            return len(runs) == len(run_ids)

        await eventually(all_done, timeout=30, what="all runs to succeed after the cut")
    for run_id in run_ids:
        assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.SUCCEEDED]


async def test_a_call_after_the_server_ended_the_idle_connections_succeeds(db_url):
    """After a restart (here: every backend ended while the pool was idle) the first
    call gets a live connection, not the dead one the pool kept, however briefly the
    dead one sat idle."""
    store = PostgresStore(db_url)
    await store.open()
    try:
        await store.now(None)  # the pool holds an idle connection now
        assert _cut_connections(db_url) >= 1
        assert await store.now(None) is not None
    finally:
        await store.close()


async def test_a_live_idle_connection_is_handed_out_without_a_round_trip(db_url, monkeypatch):
    """Only a connection the server sent something is checked: a pause costs the next
    call nothing (pool.py)."""
    checks: list[object] = []

    async def counted(conn: object) -> None:
        checks.append(conn)

    store = PostgresStore(db_url)
    await store.open()
    try:
        await store.now(None)
        monkeypatch.setattr(pool.CheckedPool, "check_connection", staticmethod(counted))
        for _ in range(3):
            await store.now(None)
        assert checks == []
        async with await psycopg.AsyncConnection.connect(db_url) as conn:
            assert not pool.has_something_to_read(conn)
            async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as other:
                pid = conn.info.backend_pid
                await other.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            assert pool.has_something_to_read(conn)
    finally:
        await store.close()
