"""Plumbing shared by the SQLite store's parts: the connection's thread, write
transactions, row decoding, and enqueueing (which the planner's writes reuse).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

from rota.domain.runs import (
    ClaimedRun,
    Enqueued,
    NewRun,
)
from rota.errors import StoreError, StoreUnavailable
from rota.observe import hooks
from rota.store.queries import load_queries

Q = load_queries("sqlite")
T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000
LIMITED_ROUNDS = 4
_INSTANT_COLUMNS = (
    "run_at",
    "sort_at",
    "lease_expires_at",
    "created_at",
    "started_at",
    "finished_at",
    "at",
    "slot_at",
    "cursor",
    "next_fire_at",
    "updated_at",
    "acquired_at",
    "expires_at",
    "deadline",
    "heartbeat_at",
    "planning_failed_at",
    "planning_retry_at",
    "oldest_due_at",
    "bucket_start",
)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _decoded(row: sqlite3.Row) -> dict[str, Any]:
    """A row as a dict with instants as datetimes and JSON columns decoded."""
    out = dict(row)
    for key in _INSTANT_COLUMNS:
        if key in out:
            out[key] = _dt(out[key])
    for key in ("payload", "result", "tags", "queues"):
        if key in out and out[key] is not None:
            out[key] = json.loads(out[key])
    return out


def _claimed(row: sqlite3.Row) -> ClaimedRun:
    return ClaimedRun(
        run_id=row[0],
        handler=row[1],
        payload=json.loads(row[2]),
        queue=row[3],
        attempt=row[4],
        max_attempts=row[5],
        fence=row[6],
        timeout=row[7],
        lost_count=row[8],
        idempotency_key=row[9],
        lease_expires_at=datetime.fromtimestamp(row[10], UTC),
        correlation_id=row[11],
        job_id=row[12],
        pickup_delay=row[13],
        trace_context=row[14],
    )


def path_from_url(url: str) -> str:
    """``sqlite:///rota.db`` is relative, ``sqlite:////var/rota.db`` absolute."""
    if not url.startswith("sqlite:///"):
        raise StoreError(f"not a SQLite URL: {url!r}")
    path = url.removeprefix("sqlite:///")
    return path or ":memory:"


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements (executescript would commit on its own)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise StoreError(f"migration ends with an incomplete statement: {buffer[:60]!r}")


class SqliteBase:
    path: str
    aging_seconds: float
    _executor: ThreadPoolExecutor
    _conn: sqlite3.Connection | None

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, fn)

    def _guarded(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise StoreError("the SQLite store is not open")
        try:
            return fn(self._conn)
        except sqlite3.OperationalError as exc:
            hooks.db_error("unavailable")
            raise StoreUnavailable(f"SQLite at {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            hooks.db_error("refused")
            raise StoreError(f"SQLite refused the operation: {exc}") from exc

    @staticmethod
    @contextmanager
    def _write(conn: sqlite3.Connection, now: datetime | None = None) -> Iterator[float]:
        """A write transaction that holds the writer lock from its first statement.

        Yields the instant the transaction treats as now: the caller's, or else the
        database clock's (on one machine, SQLite's clock is the machine's).
        """
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield now.timestamp() if now else conn.execute(Q["db_now"]).fetchone()[0]
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]:
        def work(conn: sqlite3.Connection) -> list[Enqueued]:
            with self._write(conn, now) as at:
                return self._insert_runs(conn, runs, at)

        return await self._call(work)

    def _insert_runs(
        self, conn: sqlite3.Connection, runs: Sequence[NewRun], at: float
    ) -> list[Enqueued]:
        results = []
        for run in runs:
            params = {
                "namespace": run.namespace,
                "handler": run.handler,
                "queue": run.queue,
                "payload": run.payload_json,
                "priority": run.priority,
                "run_at": _ts(run.run_at) or at,
                "aging_seconds": self.aging_seconds,
                "max_attempts": run.max_attempts,
                "timeout_seconds": run.timeout,
                "idempotency_key": run.idempotency_key,
                "replay_of": run.replay_of,
                "job_id": run.job_id,
                "slot_at": _ts(run.slot_at),
                "tags": json.dumps(sorted(run.tags)) if run.tags else None,
                "concurrency_key": run.concurrency_key,
                "concurrency_limit": run.concurrency_limit,
                "deadline": _ts(run.deadline),
                "correlation_id": run.correlation_id,
                "trace_context": run.trace_context,
                "now": at,
            }
            row = conn.execute(Q["insert_runs"], params).fetchone()
            if row is not None:
                results.append(Enqueued(row[0], created=True))
            else:
                existing = conn.execute(Q["existing_by_idempotency_key"], params)
                results.append(Enqueued(existing.fetchone()[0], created=False))
        return results

    @staticmethod
    def _term_holds(conn: sqlite3.Connection, leader_term: int | None) -> bool:
        return bool(conn.execute(Q["leader_term_holds"], {"term": leader_term}).fetchone()[0])

    async def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return await self._call(
            lambda conn: [_decoded(row) for row in conn.execute(Q[query], params)]
        )

    async def _write_rows(
        self, query: str, params: dict[str, Any], now: datetime | None = None
    ) -> list[tuple[Any, ...]]:
        def work(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            with self._write(conn, now) as at:
                return [tuple(row) for row in conn.execute(Q[query], {**params, "now": at})]

        return await self._call(work)
