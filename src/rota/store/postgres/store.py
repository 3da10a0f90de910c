"""The PostgreSQL store: psycopg 3 with an async pool.

Claims take batches with FOR UPDATE SKIP LOCKED; wake-ups come over LISTEN/NOTIFY with
polling as the fallback; the listener reconnects by itself after the server restarts.
Statements run in autocommit, one round trip each: every hot-path query is a single
statement, so it is atomic without an explicit transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Any

import psycopg
import psycopg_pool
import structlog

from rota.domain.limits import Limits
from rota.domain.runs import (
    ClaimedRun,
    Lease,
    LogLine,
    NewRun,
    Outcome,
    ReapedRun,
    RenewResult,
    Run,
    replay_request,
)
from rota.domain.states import RunState
from rota.errors import (
    HandlerTransactionsExhausted,
    InvalidTransition,
    RunNotFound,
    StoreError,
    StoreUnavailable,
)
from rota.store.port import ClaimRequest, SchemaStatus
from rota.store.postgres.api import PgApi
from rota.store.postgres.base import (
    CONNECT_OPTIONS,
    DEFAULT_HANDLER_POOL,
    HOT_PATH_LIMITS,
    LISTEN_LIMITS,
    MIGRATION_LIMITS,
    MIGRATION_LOCK,
    NOTIFY_CHANNEL,
    HandlerPoolOptions,
    Q,
    _columns,
    _first_line,
    _in_lock_order,
    _lease_arrays,
    _redact,
    _translated,
)
from rota.store.postgres.jobs import PgJobs
from rota.store.postgres.pool import CheckedPool
from rota.store.postgres.registry import PgRegistry
from rota.store.queries import latest_version, load_migrations
from rota.store.reading import RunReads
from rota.supervise import Restarts, cancel_and_wait, supervise, watched

log = structlog.get_logger("rota.store.postgres")


# The server ended the statement or session because it passed one of its limits.
SESSION_LIMIT_ERRORS = (
    psycopg.errors.IdleInTransactionSessionTimeout,
    psycopg.errors.QueryCanceled,
    psycopg.errors.LockNotAvailable,
)


class PostgresHandlerTransaction:
    """A transaction lent to a handler; it commits only together with the run's outcome."""

    def __init__(self, connection: psycopg.AsyncConnection[Any], stack: AsyncExitStack) -> None:
        self.connection = connection
        self._stack = stack
        self._finished = False

    async def commit_with(self, outcome: Outcome, aging_now: datetime | None) -> bool:
        """Write ``outcome`` fenced inside this transaction and commit both, or neither."""
        if self._finished:
            raise StoreError("handler transaction already finished")
        try:
            written = await _complete_on(self.connection, [outcome], aging_now)
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


async def _complete_on(
    conn: psycopg.AsyncConnection[Any], outcomes: Sequence[Outcome], now: datetime | None
) -> set[int]:
    outcomes = _in_lock_order(outcomes)
    params = {
        **_lease_arrays(outcomes),
        "states": [o.state.value for o in outcomes],
        "outcomes": [o.attempt_outcome.value for o in outcomes],
        "results": [o.result_json for o in outcomes],
        "errors": [o.error for o in outcomes],
        "retry_delays": [o.retry_delay for o in outcomes],
        "now": now,
    }
    with _translated():
        cur = await conn.execute(Q["complete"], params)
        return {row[0] for row in await cur.fetchall() if row[0] is not None}


class PostgresStore(PgJobs, PgRegistry, PgApi, RunReads):
    dialect = "postgres"
    supports_notify = True
    supports_copy = True
    supports_handler_transactions = True

    def __init__(
        self,
        url: str,
        *,
        aging_seconds: float = 60.0,
        pool_size: int = 4,
        handler_pool: HandlerPoolOptions = DEFAULT_HANDLER_POOL,
    ) -> None:
        self.url = url
        self.aging_seconds = aging_seconds
        # Two pools: handlers' transactions (ctx.transaction()) may be held for as long
        # as a handler runs, so they never take the connections that claims, renewals
        # and completions need; a worker whose handlers hold every connection would
        # otherwise lose its leases while it is healthy.
        self._pool = CheckedPool(
            url,
            min_size=1,
            max_size=max(pool_size, 2),
            open=False,
            kwargs={"autocommit": True, **CONNECT_OPTIONS, "options": HOT_PATH_LIMITS.options()},
            timeout=10,
        )
        self.handler_pool = handler_pool
        self._handler_pool = CheckedPool(
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
        self._limits_cache: tuple[float, Limits] | None = None
        self._listener: asyncio.Task[None] | None = None
        self.restarts = Restarts()  # failures of the store's own background task

    # -- lifecycle ----------------------------------------------------------
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
            await self._pool.open(wait=True, timeout=10)
        except psycopg_pool.PoolTimeout as exc:
            await self._pool.close()
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: no connection within 10 s"
            ) from exc
        await self._handler_pool.open(wait=False)  # connects on a handler's first use

    async def close(self) -> None:
        await cancel_and_wait(self._listener, 5.0)
        self._listener = None
        await self._handler_pool.close()
        await self._pool.close()

    # -- schema -------------------------------------------------------------
    async def schema_status(self) -> SchemaStatus:
        async with self._conn() as conn:
            return SchemaStatus(await _current_version(conn), latest_version(self.dialect))

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
                for migration in load_migrations(self.dialect)[current:]:
                    async with conn.transaction():
                        await conn.execute(migration.sql.encode())
                        await conn.execute(
                            "INSERT INTO rota_schema_migrations (version, name) VALUES (%s, %s)",
                            (migration.version, migration.name),
                        )
                    applied.append(migration.version)
                # The session-level lock ends with the connection.
        return applied

    # -- hot path -----------------------------------------------------------
    async def claim(self, request: ClaimRequest, now: datetime | None) -> list[ClaimedRun]:
        # A queue listed twice would pick its runs twice and fill the limit with
        # duplicates.
        queues = list(dict.fromkeys(request.queues))
        tags = sorted(set(request.tags))
        async with self._conn() as conn:
            limits = await self._limits(conn)
            claimed: list[ClaimedRun] = []
            plain = (
                []
                if limits.global_max is not None
                else [q for q in queues if q not in limits.queues]
            )
            if plain:
                cur = await conn.execute(
                    Q["claim"],
                    {
                        "queues": plain,
                        "limit": request.limit,
                        "worker_id": request.worker_id,
                        "lease_seconds": request.lease_seconds,
                        "tags": tags,
                        "limited_handlers": list(limits.handlers),
                        "now": now,
                    },
                )
                claimed = [ClaimedRun(*row) for row in await cur.fetchall()]
            want = request.limit - len(claimed)
            if want > 0 and (limits.any or await self._has_keyed_work(conn, queues, now)):
                claimed += await self._claim_limited(conn, request, queues, tags, limits, want, now)
            return claimed

    async def renew(
        self, worker_id: str, leases: Sequence[Lease], lease_seconds: float, now: datetime | None
    ) -> RenewResult:
        if not leases:
            return RenewResult(frozenset(), frozenset(), None)
        rows = await self._tuples(
            "renew",
            {**_lease_arrays(_in_lock_order(leases)), "lease_seconds": lease_seconds, "now": now},
        )
        held = {row[0] for row in rows}
        return RenewResult(
            lost=frozenset(lease.run_id for lease in leases) - held,
            cancel_requested=frozenset(row[0] for row in rows if row[1]),
            lease_expires_at=min((row[2] for row in rows), default=None),
        )

    async def complete(self, outcomes: Sequence[Outcome], now: datetime | None) -> set[int]:
        if not outcomes:
            return set()
        async with self._conn() as conn:
            return await _complete_on(conn, outcomes, now)

    async def recorded_outcomes(self, outcomes: Sequence[Outcome]) -> set[int]:
        params = {
            **_lease_arrays(outcomes),
            "outcomes": [o.attempt_outcome.value for o in outcomes],
        }
        rows = await self._tuples("recorded_outcomes", params)
        return {row[0] for row in rows}

    async def release(self, leases: Sequence[Lease], now: datetime | None) -> set[int]:
        if not leases:
            return set()
        rows = await self._tuples("release", {**_lease_arrays(_in_lock_order(leases)), "now": now})
        return {row[0] for row in rows}

    async def append_logs(self, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        await self._tuples(
            "append_logs",
            {
                "run_ids": [x.run_id for x in lines],
                "attempts": [x.attempt for x in lines],
                "ats": [x.at for x in lines],
                "levels": [x.level for x in lines],
                "messages": [x.message for x in lines],
                "fields": [x.fields_json for x in lines],
            },
        )

    async def begin_handler_transaction(self) -> PostgresHandlerTransaction:
        stack = AsyncExitStack()
        try:
            conn = await stack.enter_async_context(self._handler_pool.connection())
        except psycopg_pool.PoolTimeout as exc:
            raise HandlerTransactionsExhausted(
                self.handler_pool.size, self.handler_pool.wait_seconds
            ) from exc
        with _translated():
            await stack.enter_async_context(conn.transaction())
        return PostgresHandlerTransaction(conn, stack)

    # -- housekeeping -------------------------------------------------------
    async def reap_expired(
        self, now: datetime | None, poison_after: int, limit: int, leader_term: int | None = None
    ) -> list[ReapedRun]:
        rows = await self._tuples(
            "reap_expired",
            {"now": now, "poison_after": poison_after, "limit": limit, "term": leader_term},
        )
        return [ReapedRun(row[0], row[1], RunState(row[2])) for row in rows]

    async def prune_finished(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        async with self._conn() as conn:
            cur = await conn.execute(
                Q["prune_finished"], {"older_than": older_than, "limit": limit, "term": leader_term}
            )
            return cur.rowcount

    # -- reading and steering -----------------------------------------------
    async def request_cancel(self, run_id: int, now: datetime | None) -> Run:
        if not await self._tuples("cancel_waiting", {"id": run_id, "now": now}):
            await self._tuples("request_cancel_active", {"id": run_id})
        run = await self.get_run(run_id)
        if run is None:
            raise RunNotFound(run_id)
        if run.state.is_terminal and run.state is not RunState.CANCELLED:
            raise InvalidTransition(run_id, run.state.value, "cancel")
        return run

    async def replay(self, run_id: int, now: datetime | None) -> int:
        [enqueued] = await self.enqueue([replay_request(run_id, await self.get_run(run_id))], now)
        return enqueued.run_id

    # -- wake-ups -----------------------------------------------------------
    async def next_due_in(self, queues: Sequence[str], now: datetime | None) -> float | None:
        rows = await self._tuples("next_due_in", {"queues": list(queues), "now": now})
        return None if not rows or rows[0][0] is None else float(rows[0][0])

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
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS rota_schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    cur = await conn.execute("SELECT COALESCE(max(version), 0) FROM rota_schema_migrations")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


def enqueue_on_sync_connection(
    conn: Any, run: NewRun, now: datetime | None, aging_seconds: float
) -> int:
    """``app.enqueue(..., connection=conn)`` for a plain psycopg connection: the run is
    inserted inside the caller's transaction and exists only if the caller commits."""
    if not isinstance(conn, psycopg.Connection):
        raise StoreError(
            f"connection must be a psycopg.Connection (use enqueue_async for async ones), "
            f"got {type(conn).__name__}"
        )
    params = {**_columns([run]), "now": now, "aging_seconds": aging_seconds}
    with _translated():
        row = conn.execute(Q["insert_runs"], params).fetchone()
        if row is not None:
            return int(row[0])
        existing = conn.execute(
            Q["existing_by_idempotency_key"], {"keys": [run.idempotency_key]}
        ).fetchall()
        for run_id, namespace, handler, _ in existing:
            if (namespace, handler) == (run.namespace, run.handler):
                return int(run_id)
    raise StoreError(f"run with idempotency key {run.idempotency_key!r} vanished")
