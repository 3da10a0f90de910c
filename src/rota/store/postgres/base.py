"""Plumbing shared by the PostgreSQL store's parts: connections, error translation,
row helpers, and enqueueing (which the planner's writes reuse).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import psycopg
import psycopg_pool
import structlog
from psycopg.rows import dict_row

from rota.domain.jobs import Job
from rota.domain.limits import Limits
from rota.domain.runs import (
    Enqueued,
    Lease,
    NewRun,
    Outcome,
)
from rota.domain.workers import WorkerInfo, WorkerState
from rota.errors import (
    StoreError,
    StoreUnavailable,
)
from rota.observe import hooks
from rota.redact import redact_url
from rota.store.queries import load_queries
from rota.store.rows import job_from_row

log = structlog.get_logger("rota.store.postgres")

Q = load_queries("postgres")
LeaseT = TypeVar("LeaseT", Lease, Outcome)
NOTIFY_CHANNEL = "rota_wakeup"
COPY_THRESHOLD = 200  # below this, one INSERT ... unnest is cheaper than COPY's setup
LIMITED_ROUNDS = 4  # windows a limited claim may pass over (see _choose_limited)
MIGRATION_LOCK = 0x726F7461  # "rota": an advisory lock so concurrent starters migrate once
# Keepalives catch a half-open TCP connection, which otherwise raises nothing.
CONNECT_OPTIONS: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "connect_timeout": 5,
}


@dataclass(frozen=True)
class SessionLimits:
    """Server-side limits of one kind of rota session, in seconds (0: none).

    They end a transaction or a wait that a stopped or cut-off process would otherwise
    hold for ever: ``idle_in_transaction`` ends a session that sits in an open
    transaction (a SIGSTOPped worker that holds row locks), ``lock_timeout`` bounds a
    wait for another session's lock, ``statement`` bounds one statement."""

    statement: float
    lock: float
    idle_in_transaction: float

    def options(self) -> str:
        """The libpq ``options`` that set these (and UTC) when a session starts."""
        settings = {
            "timezone": "UTC",
            "statement_timeout": _ms(self.statement),
            "lock_timeout": _ms(self.lock),
            "idle_in_transaction_session_timeout": _ms(self.idle_in_transaction),
        }
        return " ".join(f"-c {name}={value}" for name, value in settings.items())


def _ms(seconds: float) -> str:
    return str(round(seconds * 1000))


# The hot path (claims, renewals, completions, the leader's duties, reads) runs single
# statements in autocommit, and its few transactions are short: a session idle inside
# one for long has stalled. Nothing there should wait long for a lock either: a renewal
# that waits is retried at the next beat rather than queueing behind a stuck session.
HOT_PATH_LIMITS = SessionLimits(statement=60, lock=10, idle_in_transaction=10)
# Migrations may rewrite big tables; waiting for other sessions' locks is bounded so a
# start-up does not hang behind a long transaction without saying so.
MIGRATION_LIMITS = SessionLimits(statement=0, lock=60, idle_in_transaction=600)
# LISTEN holds no transaction and no lock: no limits needed, and a statement timeout
# would only end a healthy wait.
LISTEN_LIMITS = SessionLimits(statement=0, lock=0, idle_in_transaction=0)


@dataclass(frozen=True)
class HandlerPoolOptions:
    """The pool that lends connections to handlers (``ctx.transaction()``): at most
    ``size`` at once, a handler waits at most ``wait_seconds`` for one, and its
    sessions carry ``limits``."""

    size: int = 8
    wait_seconds: float = 10.0
    limits: SessionLimits = SessionLimits(statement=300, lock=30, idle_in_transaction=60)


DEFAULT_HANDLER_POOL = HandlerPoolOptions()


def _columns(runs: Sequence[NewRun]) -> dict[str, list[Any]]:
    return {
        "namespaces": [r.namespace for r in runs],
        "handlers": [r.handler for r in runs],
        "queues": [r.queue for r in runs],
        "payloads": [r.payload_json for r in runs],
        "priorities": [r.priority for r in runs],
        "run_ats": [r.run_at for r in runs],
        "max_attempts": [r.max_attempts for r in runs],
        "timeouts": [r.timeout for r in runs],
        "idempotency_keys": [r.idempotency_key for r in runs],
        "replay_ofs": [r.replay_of for r in runs],
        "job_ids": [r.job_id for r in runs],
        "slot_ats": [r.slot_at for r in runs],
        # unnest cannot take an array of arrays of different lengths: each run's tags
        # travel as one array literal, cast back to text[] in SQL.
        "tag_lists": [_array_literal(r.tags) for r in runs],
        "concurrency_keys": [r.concurrency_key for r in runs],
        "concurrency_limits": [r.concurrency_limit for r in runs],
        "deadlines": [r.deadline for r in runs],
        "correlation_ids": [r.correlation_id for r in runs],
        "trace_contexts": [r.trace_context for r in runs],
    }


def _array_literal(values: Sequence[str]) -> str:
    """A PostgreSQL array literal; names are checked (no quotes or commas) upstream."""
    return "{" + ",".join(f'"{v}"' for v in sorted(values)) + "}"


def _in_lock_order(items: Sequence[LeaseT]) -> list[LeaseT]:
    """Multi-row writes (renew, complete, release) lock their rows in id order: two of
    them on overlapping runs (a heartbeat and a completion of the same worker) then wait
    for each other instead of deadlocking."""
    return sorted(items, key=lambda item: item.run_id)


def _lease_arrays(leases: Sequence[Lease | Outcome]) -> dict[str, list[int]]:
    return {"ids": [x.run_id for x in leases], "fences": [x.fence for x in leases]}


@contextlib.contextmanager
def _translated() -> Any:
    """Driver errors become rota errors; nothing above the store sees psycopg."""
    try:
        yield
    except (
        psycopg.OperationalError,
        psycopg_pool.PoolTimeout,
        # The server ended a session that sat in a transaction too long (a stalled
        # process): the link is gone, like any other dropped connection.
        psycopg.errors.IdleInTransactionSessionTimeout,
    ) as exc:
        hooks.db_error("unavailable")
        raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}".strip()) from exc
    except psycopg.Error as exc:
        # The first line and SQLSTATE only, and not chained: PostgreSQL's DETAIL and
        # CONTEXT lines quote the data it refused (a job's payload), and a chained
        # driver error would carry them into every traceback (docs/security.md).
        state = getattr(exc, "sqlstate", None) or "no SQLSTATE"
        hooks.db_error("refused")
        raise StoreError(
            f"PostgreSQL refused the operation: {_first_line(exc)} ({state})"
        ) from None


def _worker(row: tuple[Any, ...]) -> WorkerInfo:
    node_id, host, pid, version, queues, tags, concurrency, state, started, beat = row
    return WorkerInfo(
        node_id,
        host,
        pid,
        version,
        tuple(queues),
        tuple(tags),
        concurrency,
        WorkerState(state),
        started,
        beat,
    )


def _job(row: dict[str, Any]) -> Job:
    return job_from_row(row, row["spec"])


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _redact(url: str) -> str:
    """Hide a password in a URL before it goes into a message (the one helper rota
    uses wherever it prints a database URL)."""
    return redact_url(url)


class PgBase:
    url: str
    aging_seconds: float
    _pool: psycopg_pool.AsyncConnectionPool
    _limits_cache: tuple[float, Limits] | None

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        with _translated():
            async with self._pool.connection() as conn:
                yield conn

    async def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(Q[query], params)
            return await cur.fetchall() if cur.description else []

    async def _tuples(self, query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self._conn() as conn:
            cur = await conn.execute(Q[query], params)
            return await cur.fetchall() if cur.description else []

    # -- producing ----------------------------------------------------------
    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]:
        async with self._conn() as conn:
            return await self.enqueue_on(conn, runs, now)

    async def enqueue_on(
        self, conn: psycopg.AsyncConnection[Any], runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        """Enqueue on a given connection, inside whatever transaction it has open."""
        if not runs:
            return []
        with _translated():
            if len(runs) >= COPY_THRESHOLD and all(r.idempotency_key is None for r in runs):
                return await self._copy_runs(conn, runs, now)
            return await self._insert_runs(conn, runs, now)

    async def _insert_runs(
        self, conn: psycopg.AsyncConnection[Any], runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        params = {**_columns(runs), "now": now, "aging_seconds": self.aging_seconds}
        cur = await conn.execute(Q["insert_runs"], params)
        inserted = await cur.fetchall()
        if len(inserted) == len(runs) and len(runs) == 1:
            return [Enqueued(inserted[0][0], created=True)]
        # Map rows back by (namespace, handler, key): a key is unique only within its
        # namespace and handler, and may repeat within one batch (ON CONFLICT then keeps
        # the first). Unkeyed rows never conflict and come back in input order because
        # ids are drawn from one sequence in scan order.
        by_key = {(ns, h, k): run_id for run_id, ns, h, k in inserted if k is not None}
        unkeyed = sorted(run_id for run_id, _, _, k in inserted if k is None)
        missing = {
            r.idempotency_key
            for r in runs
            if r.idempotency_key is not None
            and (r.namespace, r.handler, r.idempotency_key) not in by_key
        }
        existing: dict[tuple[str, str, str], int] = {}
        if missing:
            cur = await conn.execute(Q["existing_by_idempotency_key"], {"keys": list(missing)})
            existing = {(ns, h, k): i for i, ns, h, k in await cur.fetchall()}
        results: list[Enqueued] = []
        unkeyed_iter = iter(unkeyed)
        for run in runs:
            if run.idempotency_key is None:
                results.append(Enqueued(next(unkeyed_iter), created=True))
                continue
            key = (run.namespace, run.handler, run.idempotency_key)
            if key in by_key:
                # The first run with this key created it; later ones in the batch match it.
                existing[key] = by_key.pop(key)
                results.append(Enqueued(existing[key], created=True))
            else:
                results.append(Enqueued(existing[key], created=False))
        return results

    async def _copy_runs(
        self, conn: psycopg.AsyncConnection[Any], runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        # COPY returns nothing, so ids are drawn first; both steps share a transaction.
        async with conn.transaction():
            cur = await conn.execute(Q["reserve_ids"], {"count": len(runs), "now": now})
            reserved = await cur.fetchall()
            db_now: datetime = reserved[0][1]
            aging = timedelta(seconds=self.aging_seconds)
            async with conn.cursor().copy(Q["copy_runs"]) as copy:
                for (run_id, _), run in zip(reserved, runs, strict=True):
                    run_at = run.run_at or db_now
                    await copy.write_row(
                        (
                            run_id,
                            run.namespace,
                            run.handler,
                            run.queue,
                            run.payload_json,
                            run.priority,
                            run_at,
                            run_at - aging * run.priority,
                            run.max_attempts,
                            run.timeout,
                            run.replay_of,
                            run.job_id,
                            run.slot_at,
                            sorted(run.tags) or None,
                            run.concurrency_key,
                            run.concurrency_limit,
                            run.deadline,
                            run.correlation_id,
                            run.trace_context,
                            db_now,
                        )
                    )
        return [Enqueued(run_id, created=True) for run_id, _ in reserved]
