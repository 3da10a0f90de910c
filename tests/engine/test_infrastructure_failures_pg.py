"""PostgreSQL: a handler transaction cut off by the server, and a completion whose
commit broke mid-way, cost no attempt and settle at once (see the SQLite-and-PostgreSQL
half in test_infrastructure_failures.py)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import psycopg
import pytest

import rota
from rota.domain.states import TERMINAL_STATES, AttemptOutcome, RunState
from rota.errors import StoreUnavailable
from tests.engine.conftest import side_effects, with_side_effects_table, working
from tests.engine.test_infrastructure_failures import LEASE, _history
from tests.helpers import eventually
from tests.waiting import wait_for_state

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_url(pg_clean: str) -> str:
    return with_side_effects_table(pg_clean)


async def test_a_handler_transaction_cut_off_by_the_server_costs_no_attempt(make_app, db_url):
    app = make_app(lease_seconds=LEASE)
    calls = 0

    @app.handler("write", max_attempts=1)
    async def write(ctx: rota.RunContext, payload: Any) -> None:
        nonlocal calls
        calls += 1
        conn = await ctx.transaction()
        await conn.execute("INSERT INTO side_effects VALUES (%s, %s)", (ctx.run_id, ctx.fence))
        if calls == 1:  # the server drops this session (a restart, a failover, a kill)
            async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as admin:
                await admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
            await conn.execute("SELECT 1")  # the driver's error reaches the handler

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("write", {})
        run = await wait_for_state(store, run_id, *TERMINAL_STATES, what="the run to finish")
    assert run.state is RunState.SUCCEEDED
    assert await _history(store, run_id) == [
        (1, AttemptOutcome.INFRASTRUCTURE),
        (1, AttemptOutcome.SUCCEEDED),
    ]
    assert side_effects(db_url) == [(run_id, 2)]  # the cut-off write never committed


class _BreaksAtCommit:
    """A handler transaction whose link breaks during COMMIT, after the commit landed
    on the server or before it did: the worker cannot know which."""

    def __init__(self, transaction: Any, lands: bool) -> None:
        self._transaction = transaction
        self._lands = lands
        self.connection = transaction.connection

    def broke_under(self, error: BaseException) -> bool:
        return False

    async def commit_with(self, outcome: Any, now: Any) -> bool:
        if self._lands:
            await self._transaction.commit_with(outcome, now)
        else:
            await self._transaction.rollback()
        raise StoreUnavailable("PostgreSQL is unreachable: connection lost during COMMIT")

    async def rollback(self) -> None:
        await self._transaction.rollback()


@pytest.mark.parametrize("lands", [False, True], ids=["commit-lost", "commit-landed"])
async def test_a_completion_that_breaks_mid_commit_is_settled_at_once(make_app, db_url, lands):
    app = make_app(lease_seconds=LEASE)

    @app.handler("write", max_attempts=1)
    async def write(ctx: rota.RunContext, payload: Any) -> str:
        conn = await ctx.transaction()
        await conn.execute("INSERT INTO side_effects VALUES (%s, %s)", (ctx.run_id, ctx.fence))
        return "written"

    store = await app.store()
    opened = store.begin_handler_transaction
    broken = 0

    async def begin() -> Any:
        nonlocal broken
        transaction = await opened()
        broken += 1
        return _BreaksAtCommit(transaction, lands) if broken == 1 else transaction

    store.begin_handler_transaction = begin  # type: ignore[method-assign]
    unretrieved: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unretrieved.append(context))
    try:
        async with working(app):
            run_id = await app.enqueue_async("write", {})
            run = await wait_for_state(store, run_id, *TERMINAL_STATES, what="the run to settle")
        gc.collect()  # a task whose error nobody retrieved is reported when collected
    finally:
        loop.set_exception_handler(None)
    assert [c["message"] for c in unretrieved] == []
    assert run.state is RunState.SUCCEEDED
    if lands:  # the first commit stands; nothing ran twice
        assert await _history(store, run_id) == [(1, AttemptOutcome.SUCCEEDED)]
        assert side_effects(db_url) == [(run_id, 1)]
    else:  # retried at once, its attempt given back; never reaped as lost
        assert await _history(store, run_id) == [
            (1, AttemptOutcome.INFRASTRUCTURE),
            (1, AttemptOutcome.SUCCEEDED),
        ]
        assert side_effects(db_url) == [(run_id, 2)]


async def test_a_transaction_ended_by_its_own_idle_limit_is_the_handlers_failure(make_app, db_url):
    """The server ending a handler's session for idling in its transaction is a limit
    the handler passed, not an outage: the attempt counts."""
    app = make_app(lease_seconds=LEASE, handler_idle_in_transaction_seconds=0.2)

    @app.handler("idles", max_attempts=1)
    async def idles(ctx: rota.RunContext, payload: Any) -> None:
        conn = await ctx.transaction()
        pid = conn.info.backend_pid
        await conn.execute("SELECT 1")
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as watcher:

            async def ended() -> bool:
                cur = await watcher.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
                return await cur.fetchone() is None

            await eventually(ended, what="the server to end the idle session")
        await conn.execute("SELECT 1")

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("idles", {})
        run = await wait_for_state(store, run_id, *TERMINAL_STATES, what="the run to finish")
    assert run.state is RunState.DEAD_LETTERED
    assert await _history(store, run_id) == [(1, AttemptOutcome.FAILED)]
