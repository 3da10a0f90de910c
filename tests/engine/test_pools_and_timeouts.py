"""PostgreSQL: handlers' transactions cannot starve lease renewals, the handler pool is
bounded with a clear error, and a session that stalls inside a transaction is ended
by the server instead of holding its locks."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

import rota
from rota.domain.states import RunState
from rota.errors import HandlerTransactionsExhausted
from rota.store.postgres import CONNECT_OPTIONS, HOT_PATH_LIMITS, PostgresStore
from tests.engine.conftest import working
from tests.helpers import eventually
from tests.waiting import wait_for_state

pytestmark = pytest.mark.postgres
LEASE = 2.0


@pytest.fixture
def db_url(pg_clean: str) -> str:
    return pg_clean


def _leases(url: str) -> list[tuple[int, str, int, float, float]]:
    """(id, state, fence, seconds since start, seconds the lease has left) per run."""
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT id, state, fence,"
            " extract(epoch FROM now() - started_at)::float8,"
            " extract(epoch FROM lease_expires_at - now())::float8"
            " FROM rota_runs ORDER BY id"
        ).fetchall()


async def test_handlers_holding_transactions_past_the_lease_do_not_starve_renewals(
    make_app, db_url
):
    # As many handler transactions as the hot pool has connections: before the pools
    # were split, these held every connection and renewals waited until leases lapsed.
    app = make_app(lease_seconds=LEASE, pool_size=4)
    release = asyncio.Event()
    holding = 0

    @app.handler("hold")
    async def hold(ctx: rota.RunContext, payload: dict) -> None:
        nonlocal holding
        conn = await ctx.transaction()
        await conn.execute("SELECT 1")
        holding += 1
        await release.wait()

    async with working(app, concurrency=4):
        await app.enqueue_many_async([{"handler": "hold"} for _ in range(4)])
        await eventually(lambda: _true(holding == 4), what="4 transactions held")

        async def held_past_the_lease() -> bool:
            rows = await asyncio.to_thread(_leases, db_url)
            return len(rows) == 4 and all(
                started is not None and started > 2.5 * LEASE for *_, started, _ in rows
            )

        await eventually(held_past_the_lease, timeout=60, what="transactions held past the TTL")
        rows = await asyncio.to_thread(_leases, db_url)
        assert [(state, fence) for _, state, fence, _, _ in rows] == [("running", 1)] * 4, rows
        assert all(left > 0 for *_, left in rows), "every lease still renewed"
        release.set()
        store = await app.store()
        for run_id, *_ in rows:
            await wait_for_state(store, run_id, RunState.SUCCEEDED, what="completion")
            assert len(await store.attempts(run_id)) == 1  # never lost, never re-run


async def test_an_exhausted_handler_pool_names_its_setting(db_url):
    store = PostgresStore(
        db_url,
        handler_pool=rota.store.postgres.HandlerPoolOptions(size=1, wait_seconds=0.2),
    )
    await store.open()
    try:
        first = await store.begin_handler_transaction()
        with pytest.raises(HandlerTransactionsExhausted, match="handler_pool_size") as caught:
            await store.begin_handler_transaction()
        assert caught.value.size == 1
        await first.rollback()
        second = await store.begin_handler_transaction()  # free again once returned
        await second.rollback()
    finally:
        await store.close()


async def test_a_stalled_transaction_holding_a_run_row_is_ended_by_the_server(db_url):
    """A SIGSTOPped process that locked a run row inside a transaction: the server ends
    its session after the idle limit, and the others' write goes through."""
    store = PostgresStore(db_url)
    await store.open()
    try:
        [enqueued] = await store.enqueue([rota.domain.runs.NewRun("job", "{}")], None)
        limits = rota.store.postgres.SessionLimits(
            statement=HOT_PATH_LIMITS.statement,
            lock=HOT_PATH_LIMITS.lock,
            idle_in_transaction=0.5,  # the hot path's, made short for the test
        )
        stalled = await psycopg.AsyncConnection.connect(
            db_url, **CONNECT_OPTIONS, options=limits.options()
        )
        await stalled.execute(
            "SELECT id FROM rota_runs WHERE id = %s FOR UPDATE", (enqueued.run_id,)
        )
        # ... and the process stops here, its transaction open. Another session's
        # write to the same row waits for the lock, then goes through.
        run = await asyncio.wait_for(store.request_cancel(enqueued.run_id, None), 30)
        assert run.state is RunState.CANCELLED
        with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
            await stalled.execute("SELECT 1")  # its session was ended by the server
        await stalled.close()
    finally:
        await store.close()


async def test_rota_sessions_carry_their_limits(db_url):
    store = PostgresStore(db_url)
    await store.open()
    try:
        async with store._conn() as conn:
            cur = await conn.execute(
                "SELECT current_setting('idle_in_transaction_session_timeout'),"
                " current_setting('lock_timeout'), current_setting('statement_timeout')"
            )
            rows = await cur.fetchall()
    finally:
        await store.close()
    assert rows == [("10s", "10s", "1min")]


async def _true(value: bool) -> bool:
    return value
