"""PostgreSQL under the dialect seam: psycopg 3 with async pools.

Claims take batches with FOR UPDATE SKIP LOCKED; wake-ups come over LISTEN/NOTIFY with
polling as the fallback; the listener reconnects by itself after the server restarts.
Statements run in autocommit, one round trip each: every hot-path query is a single
statement (a batch is one statement over arrays), so it is atomic without an explicit
transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import psycopg
import psycopg_pool
import structlog

from rota.domain.runs import NewRun
from rota.errors import StoreUnavailable
from rota.store.dialect import (
    NO_PARAMS,
    Body,
    ClaimLockBusy,
    Instant,
    Items,
    Params,
    Row,
)
from rota.store.postgres.arrays import hot_path_adapters
from rota.store.postgres.base import (
    CONNECT_OPTIONS,
    DEFAULT_HANDLER_POOL,
    HOT_PATH_LIMITS,
    LISTEN_LIMITS,
    MIGRATION_LIMITS,
    MIGRATION_LOCK,
    NOTIFY_CHANNEL,
    HandlerPoolOptions,
    _first_line,
    _redact,
    _translated,
    rerun_on_conflict,
)
from rota.store.postgres.pool import CheckedPool
from rota.store.postgres.session import DIALECT, PgSession, Q
from rota.store.queries import load_migrations
from rota.supervise import Restarts, cancel_and_wait, supervise, watched

log = structlog.get_logger("rota.store.postgres")
T = TypeVar("T")
HOT_PATH_ADAPTERS = hot_path_adapters()
# Statistics for the history partition that finished runs are landing in now.
TODAYS_HISTORY_ANALYZE = """
DO $$
DECLARE today text := 'rota_runs_history_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD');
BEGIN
    IF to_regclass(today) IS NOT NULL THEN EXECUTE format('ANALYZE %I', today); END IF;
END
$$"""


class PgDialect:
    name = DIALECT
    supports_notify = True
    supports_copy = True
    supports_handler_transactions = True
    claims_read_first = False

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 4,
        handler_pool: HandlerPoolOptions = DEFAULT_HANDLER_POOL,
    ) -> None:
        self.url = url
        # Two pools: handlers' transactions (ctx.transaction()) may be held for as long
        # as a handler runs, so they never take the connections that claims, renewals
        # and completions need; a worker whose handlers hold every connection would
        # otherwise lose its leases while it is healthy.
        self.pool = CheckedPool(
            url,
            min_size=1,
            max_size=max(pool_size, 2),
            open=False,
            kwargs={
                "autocommit": True,
                **CONNECT_OPTIONS,
                "options": HOT_PATH_LIMITS.options(),
                "context": HOT_PATH_ADAPTERS,
                # Prepared on its second call, not its sixth: until then each call of a
                # statement is parsed and planned anew (the completion's 0.7 ms), on
                # every new connection. Not its first: psycopg would then prepare a
                # query of several statements, which PostgreSQL refuses; a second call
                # knows it is one (psycopg prepares only single-statement queries).
                "prepare_threshold": 1,
            },
            timeout=10,
        )
        self.handler_pool_options = handler_pool
        self.handler_pool = CheckedPool(
            url,
            min_size=0,
            max_size=handler_pool.size,
            open=False,
            kwargs={
                "autocommit": True,
                **CONNECT_OPTIONS,
                "options": handler_pool.limits.options(),
            },
            timeout=handler_pool.wait_seconds,
        )
        self._wakeup = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self.restarts = Restarts()  # failures of the store's own background task

    # -- lifecycle and schema -------------------------------------------------
    async def open(self) -> None:
        # One direct connection first: a server that is down gives one clear error at
        # once, instead of the pool's retries and warnings for ten seconds.
        try:
            probe = await psycopg.AsyncConnection.connect(self.url, **CONNECT_OPTIONS)
            await probe.close()
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: {_first_line(exc)}"
            ) from exc
        try:
            await self.pool.open(wait=True, timeout=10)
        except psycopg_pool.PoolTimeout as exc:
            await self.pool.close()
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: no connection within 10 s"
            ) from exc
        await self.handler_pool.open(wait=False)  # connects on a handler's first use

    async def close(self) -> None:
        await cancel_and_wait(self._listener, 5.0)
        self._listener = None
        await self.handler_pool.close()
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled hot-path connection (autocommit)."""
        with _translated():
            async with self.pool.connection() as conn:
                yield conn

    async def schema_version(self) -> int:
        """The applied version, read without creating anything: two processes starting
        on a fresh database (a web service and its worker) must not both CREATE the
        version table outside the migration lock (PostgreSQL then fails one of them on
        pg_type's unique index)."""
        async with self.connection() as conn:
            cur = await conn.execute("SELECT to_regclass('rota_schema_migrations') IS NOT NULL")
            row = await cur.fetchone()
            return await _current_version(conn) if row and row[0] else 0

    async def migrate(self) -> list[int]:
        applied: list[int] = []
        # A connection of its own, with limits for long schema changes (the pool's are
        # for the hot path).
        with _translated():
            conn = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, **CONNECT_OPTIONS, options=MIGRATION_LIMITS.options()
            )
            async with conn:
                await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
                current = await _current_version(conn)
                for migration in load_migrations(DIALECT)[current:]:
                    async with conn.transaction():
                        await conn.execute(migration.sql.encode())
                        await conn.execute(
                            "INSERT INTO rota_schema_migrations (version, name) VALUES (%s, %s)",
                            (migration.version, migration.name),
                        )
                    applied.append(migration.version)
                # The session-level lock ends with the connection.
        return applied

    # -- the seam ---------------------------------------------------------------
    async def rows(
        self, query: str, params: Params = NO_PARAMS, now: datetime | None = None
    ) -> list[Row]:
        async with self.connection() as conn:
            return await PgSession(conn, now).rows(query, params)

    async def write(
        self, query: str, params: Params = NO_PARAMS, now: datetime | None = None
    ) -> list[Row]:
        return await self.rows(query, params, now)  # one statement: atomic in autocommit

    async def batch(self, query: str, items: Items, shared: Params, now: Instant) -> list[Row]:
        async with self.connection() as conn:
            return await PgSession(conn, now).batch(query, items, shared)

    async def copy_runs(
        self, runs: Sequence[NewRun], aging_seconds: float, now: datetime | None
    ) -> list[int]:
        async with self.connection() as conn:
            return await PgSession(conn, now).copy_runs(runs, aging_seconds)

    @asynccontextmanager
    async def session(self, now: datetime | None) -> AsyncIterator[PgSession]:
        async with self.connection() as conn:  # autocommit: each statement its own write
            yield PgSession(conn, now)

    async def in_transaction(self, now: datetime | None, body: Body[T]) -> T:
        async with self.connection() as conn:

            async def attempt() -> T:
                with _translated():
                    async with conn.transaction():
                        return await body(PgSession(conn, now))

            return await rerun_on_conflict(attempt)

    async def in_serialised(self, now: datetime | None, body: Body[T]) -> T:
        # Every limited claim of the cluster holds this lock in turn, so each wait on
        # this process while holding it (a round trip, then this event loop's turn to
        # resume) bounds the cluster's limited drain. Pipelined, BEGIN, the lock and the
        # body's first statement travel together, and the body's last statement carries
        # the COMMIT (rows_then_commit): the lock is held across one such wait, not
        # three (ADR 0016, third addendum).
        async with self.connection() as conn:
            with _translated():
                try:
                    async with conn.pipeline() as pipeline:
                        session = PgSession(conn, now, pipeline)
                        await conn.execute("BEGIN")
                        await conn.execute(Q["claim_lock"])
                        result = await body(session)
                        if not session.committed:
                            await conn.execute("COMMIT")
                except (ClaimLockBusy, psycopg.errors.LockNotAvailable):
                    await _roll_back(conn)
                    raise ClaimLockBusy("another claimer holds the limits lock") from None
                except BaseException:
                    await _roll_back(conn)
                    raise
                return result

    # -- housekeeping and wake-ups ----------------------------------------------
    async def vacuum(self) -> None:
        # Autovacuum may be off or too slow for a queue's churn (ANCHORS: claim throughput
        # fell 70% in 40 s without it). VACUUM needs autocommit, which pool connections
        # have; it does not block readers or writers.
        # The hot path's statement timeout (a minute) is not meant for VACUUM, which
        # may take longer on a big table; RESET returns to the session's own limits.
        async with self.connection() as conn:
            await conn.execute("SET statement_timeout = 0")
            try:
                # The queue churns; of history only today's partition changes (ADR 0027).
                await conn.execute("VACUUM (ANALYZE) rota_runs_live")
                await conn.execute(TODAYS_HISTORY_ANALYZE)
                # Attempts and log lines are appended and retired a day at a time
                # (migration 30): the few rows a deletion by hand leaves are autovacuum's.
                await conn.execute("VACUUM rota_jobs, rota_workers")
            except BaseException:
                # Interrupted (cancelled, cut off): a session without its statement limit
                # must not go back to the pool; a closed connection is discarded.
                await conn.close()
                raise
            await conn.execute("RESET statement_timeout")

    def runs_committed(self) -> None:
        pass  # the insert trigger's NOTIFY wakes every listener, this process's too

    async def wait_for_work(self, timeout: float) -> None:
        if self._listener is None:
            self._listener = watched(
                supervise("listen", self._listen, self.restarts), "rota-listen"
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        self._wakeup.clear()

    async def _listen(self) -> None:
        """Keep one LISTEN connection alive; after any break, reconnect and wake the
        worker, since notifications sent while we were away are lost."""
        backoff = 0.1
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, **CONNECT_OPTIONS, options=LISTEN_LIMITS.options()
                ) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    backoff = 0.1
                    self._wakeup.set()
                    while True:
                        async for _ in conn.notifies(timeout=5.0):
                            self._wakeup.set()
                        await conn.execute("SELECT 1")  # raises if the link died quietly
            except asyncio.CancelledError:
                raise
            except psycopg.Error as exc:
                log.warning("listen connection lost; reconnecting", error=str(exc), backoff=backoff)
                self._wakeup.set()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)


async def _current_version(conn: psycopg.AsyncConnection[Any]) -> int:
    """The applied version; the version table is made if missing, so only under the
    migration lock (migrate) or once it exists (schema_version)."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS rota_schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    cur = await conn.execute("SELECT COALESCE(max(version), 0) FROM rota_schema_migrations")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _roll_back(conn: psycopg.AsyncConnection[Any]) -> None:
    """End a transaction opened by hand, if the connection is still in one. A connection
    that broke (or was closed by a cancelled query) has nothing to roll back; the pool
    discards it, and the error that got us here is the one to raise."""
    status = conn.info.transaction_status
    if status in (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR):
        with contextlib.suppress(psycopg.Error):
            await conn.execute("ROLLBACK")
