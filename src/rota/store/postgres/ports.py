"""PostgreSQL's optional ports (store/optional.py): handler transactions and enqueueing
on the caller's own connection."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Any

import psycopg
import psycopg_pool

from rota.domain.events import NewEvent, Published, WorkflowStarts
from rota.domain.runs import Enqueued, NewRun, Outcome
from rota.errors import HandlerTransactionsExhausted, StoreError
from rota.store.core.base import insert_runs, missing_keys, run_item
from rota.store.core.events import publish_in
from rota.store.core.runs import complete_in
from rota.store.dialect import drive
from rota.store.postgres.base import HandlerPoolOptions, _translated
from rota.store.postgres.session import PgSession, Q, SyncPgSession, as_arrays

# The server ended the statement or session because it passed one of its limits.
SESSION_LIMIT_ERRORS = (
    psycopg.errors.IdleInTransactionSessionTimeout,
    psycopg.errors.QueryCanceled,
    psycopg.errors.LockNotAvailable,
)


class PostgresHandlerTransaction:
    """A transaction lent to a handler; it commits only together with the run's outcome."""

    def __init__(
        self, connection: psycopg.AsyncConnection[Any], stack: AsyncExitStack, map_max_items: int
    ) -> None:
        self.connection = connection
        self._stack = stack
        self._map_max_items = map_max_items
        self._finished = False

    async def commit_with(self, outcome: Outcome, aging_now: datetime | None) -> bool:
        """Write ``outcome`` fenced inside this transaction and commit both, or neither."""
        if self._finished:
            raise StoreError("handler transaction already finished")
        try:
            session = PgSession(self.connection, aging_now)
            written = await complete_in(session, [outcome], map_max_items=self._map_max_items)
        except BaseException:
            await self.rollback()
            raise
        if outcome.run_id not in written:
            await self.rollback()
            return False
        self._finished = True
        with _translated():
            await self._stack.aclose()
        return True

    def broke_under(self, error: BaseException) -> bool:
        """Did the handler fail because the link to the server broke (killed,
        restarted, cut off)? Not when the session's own limits ended it: a transaction
        left idle too long, or a statement or lock wait past its timeout, is the
        handler's doing, and counts as its failure."""
        seen: BaseException | None = error
        for _ in range(10):
            if seen is None:
                break
            if isinstance(seen, SESSION_LIMIT_ERRORS):
                return False
            seen = seen.__cause__ or seen.__context__
        return bool(self.connection.broken or self.connection.closed)

    async def rollback(self) -> None:
        if self._finished:
            return
        self._finished = True
        with _translated(), contextlib.suppress(psycopg.Error):
            await self._stack.__aexit__(psycopg.Rollback, psycopg.Rollback(), None)


async def begin_handler_transaction(
    pool: psycopg_pool.AsyncConnectionPool, options: HandlerPoolOptions, map_max_items: int
) -> PostgresHandlerTransaction:
    stack = AsyncExitStack()
    try:
        conn = await stack.enter_async_context(pool.connection())
    except psycopg_pool.PoolTimeout as exc:
        raise HandlerTransactionsExhausted(options.size, options.wait_seconds) from exc
    with _translated():
        await stack.enter_async_context(conn.transaction())
    return PostgresHandlerTransaction(conn, stack, map_max_items)


class PostgresCallerEnqueue:
    """Enqueue (and publish events) on a connection the caller holds, inside its open
    transaction."""

    def __init__(self, aging_seconds: float) -> None:
        self.aging_seconds = aging_seconds

    async def enqueue_on(
        self, connection: Any, runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        if not isinstance(connection, psycopg.AsyncConnection):
            raise StoreError(
                "connection must be a psycopg.AsyncConnection (use enqueue for plain ones), "
                f"got {type(connection).__name__}"
            )
        return await insert_runs(PgSession(connection, now), runs, self.aging_seconds, copy=True)

    def enqueue_on_sync(self, connection: Any, run: NewRun, now: datetime | None) -> int:
        """The same for a plain psycopg connection (the library's sync door)."""
        if not isinstance(connection, psycopg.Connection):
            raise StoreError(
                f"connection must be a psycopg.Connection (use enqueue_async for async ones), "
                f"got {type(connection).__name__}"
            )
        params = {**as_arrays([run_item(run)], {"aging_seconds": self.aging_seconds}), "now": now}
        with _translated():
            row = connection.execute(Q["insert_runs"], params).fetchone()
            if row is not None:
                return int(row[0])
            keys = missing_keys([run], [])
            existing = connection.execute(Q["existing_by_idempotency_key"], {"keys": keys})
            for run_id, namespace, handler, _ in existing.fetchall():
                if (namespace, handler) == (run.namespace, run.handler):
                    return int(run_id)
        raise StoreError(f"run with idempotency key {run.idempotency_key!r} vanished")

    async def publish_on(
        self,
        connection: Any,
        event: NewEvent,
        now: datetime | None,
        starts: WorkflowStarts | None = None,
    ) -> Published:
        if not isinstance(connection, psycopg.AsyncConnection):
            raise StoreError(
                "connection must be a psycopg.AsyncConnection (use publish for plain ones), "
                f"got {type(connection).__name__}"
            )
        return await publish_in(PgSession(connection, now), event, self.aging_seconds, starts)

    def publish_on_sync(
        self,
        connection: Any,
        event: NewEvent,
        now: datetime | None,
        starts: WorkflowStarts | None = None,
    ) -> Published:
        """The same for a plain psycopg connection (the library's sync door)."""
        if not isinstance(connection, psycopg.Connection):
            raise StoreError(
                "connection must be a psycopg.Connection (use publish_async for async ones), "
                f"got {type(connection).__name__}"
            )
        session = SyncPgSession(connection, now)
        return drive(lambda s: publish_in(s, event, self.aging_seconds, starts), session)
