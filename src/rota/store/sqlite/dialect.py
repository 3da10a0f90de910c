"""SQLite under the dialect seam: rota's zero-infrastructure default.

One file in WAL mode shared by several worker processes on one machine. Each write is a
``BEGIN IMMEDIATE`` transaction, which takes SQLite's single writer lock up front, so a
claim is a compare-and-set that no other process can interleave with, and a busy
timeout queues writers instead of failing them with "database is locked".

sqlite3 is blocking, so the dialect owns one connection driven by one thread; the async
methods hand work to it, one call each: a one-shot call (``rows``, ``write``, ``batch``)
and a whole transaction alike (the core's body runs to its end inside the thread, see
``drive``), so the writer lock is never held while the event loop runs something else
(a process paused there would stall every other one).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import (
    AbstractAsyncContextManager,
    contextmanager,
    nullcontext,
)
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import NamedTuple, TypeVar

from rota.domain.runs import NewRun
from rota.errors import StoreError, StoreUnavailable
from rota.observe import hooks
from rota.store.dialect import (
    NO_PARAMS,
    Body,
    Instant,
    Items,
    OneShot,
    Params,
    Row,
    Session,
    drive,
)
from rota.store.queries import load_migrations, load_queries
from rota.store.sqlite.codec import decoded, encoded, items_json, statements

T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000
DIALECT = "sqlite"
Q = load_queries(DIALECT)


class _Compiled(NamedTuple):
    statements: tuple[str, ...]
    reads_now: bool
    # Set-based: the query reads a whole batch as one JSON array, ``:items``, through
    # json_each (a batch of 100 outcomes is then 3 statements, not 300). Every
    # statement a thread runs gives up the GIL and takes it back from a busy event loop,
    # so per-item statements cost the drain far more wall time than CPU.
    takes_items: bool


@cache
def _compiled(query: str) -> _Compiled:
    sql = Q[query]
    return _Compiled(tuple(statements(sql + ";")), ":now" in sql, ":items" in sql)


def path_from_url(url: str) -> str:
    """``sqlite:///rota.db`` is relative, ``sqlite:////var/rota.db`` absolute."""
    if not url.startswith("sqlite:///"):
        raise StoreError(f"not a SQLite URL: {url!r}")
    path = url.removeprefix("sqlite:///")
    return path or ":memory:"


class _ThreadSession:
    """Runs named queries on the connection, in the store's thread."""

    def __init__(self, conn: sqlite3.Connection, now: float | None) -> None:
        self.conn = conn
        self.now = now

    def _now(self) -> float:
        if self.now is None:
            self.now = float(self.conn.execute(Q["db_now"]).fetchone()[0])
        return self.now

    def run(self, query: str, params: Params) -> list[Row]:
        compiled = _compiled(query)
        bound = encoded(params)
        if compiled.reads_now:
            bound["now"] = self._now()
        for statement in compiled.statements:
            cursor = self.conn.execute(statement, bound)
            rows = cursor.fetchall()
        if not rows:
            return []
        return decoded([column[0] for column in cursor.description], rows)

    def batch(self, query: str, items: Sequence[Params], shared: Params) -> list[Row]:
        if _compiled(query).takes_items:
            if not items:
                return []
            return self.run(query, {**shared, "items": items_json(items)})
        found = []
        for item in items:
            found += self.run(query, {**shared, **item} if shared else item)
        return found


class _InThread:
    """A transaction's session for the core's body, inside the store's thread: its
    calls complete at once, so the whole body runs in one call (see ``drive``)."""

    def __init__(self, inner: _ThreadSession) -> None:
        self._inner = inner

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        return self._inner.run(query, params)

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        return self._inner.run(query, params)  # the transaction commits when the body ends

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        return self._inner.batch(query, items, shared)

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        raise StoreError("COPY is a PostgreSQL capability (supports_copy is False)")


class SqliteDialect:
    name = DIALECT
    supports_notify = False
    supports_copy = False
    supports_handler_transactions = False
    claims_read_first = True

    def __init__(self, url: str, poll_seconds: float = 0.05) -> None:
        self.url = url
        self.path = path_from_url(url)
        self.poll_seconds = poll_seconds
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rota-sqlite")
        # The idle worker's wake-up and the loop it waits on (see runs_committed).
        self._committed: tuple[asyncio.Event, asyncio.AbstractEventLoop] | None = None
        self._conn: sqlite3.Connection | None = None

    # -- the connection's thread ----------------------------------------------
    async def _hop(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, fn)

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        # One hop per call, transactions included: the thread's queue orders them.
        return await self._hop(fn)

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
    def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
        """A write transaction that holds the writer lock from its first statement."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _connect(self) -> None:
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreUnavailable(f"SQLite: folder {parent} does not exist")
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        switch_to_wal(conn)
        # NORMAL in WAL mode keeps commits durable against a process crash (what workers
        # do); only a power loss can drop the last transactions.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        self._conn = conn

    # -- lifecycle and schema -------------------------------------------------
    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._connect)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite database {self.path}: {exc}") from exc

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)

    @staticmethod
    def _current_version(conn: sqlite3.Connection) -> int:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS rota_schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0))"
        )
        row = conn.execute("SELECT COALESCE(max(version), 0) FROM rota_schema_migrations")
        return int(row.fetchone()[0])

    async def schema_version(self) -> int:
        return await self._call(self._current_version)

    async def migrate(self) -> list[int]:
        def work(conn: sqlite3.Connection) -> list[int]:
            applied = []
            with self._immediate(conn):
                current = self._current_version(conn)
                for migration in load_migrations(DIALECT)[current:]:
                    for statement in statements(migration.sql):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO rota_schema_migrations (version, name) VALUES (?, ?)",
                        (migration.version, migration.name),
                    )
                    applied.append(migration.version)
            return applied

        return await self._call(work)

    # -- the seam ---------------------------------------------------------------
    @staticmethod
    def _instant(now: datetime | None) -> float | None:
        return None if now is None else now.timestamp()

    async def rows(
        self, query: str, params: Params = NO_PARAMS, now: datetime | None = None
    ) -> list[Row]:
        instant = self._instant(now)
        return await self._call(lambda conn: _ThreadSession(conn, instant).run(query, params))

    async def write(
        self, query: str, params: Params = NO_PARAMS, now: datetime | None = None
    ) -> list[Row]:
        return await self.batch(query, [params], NO_PARAMS, now)

    async def batch(self, query: str, items: Items, shared: Params, now: Instant) -> list[Row]:
        def work(conn: sqlite3.Connection) -> list[Row]:
            with self._immediate(conn):
                return _ThreadSession(conn, instant).batch(query, items, shared)

        instant = self._instant(now)
        return await self._call(work)

    async def copy_runs(
        self, runs: Sequence[NewRun], aging_seconds: float, now: datetime | None
    ) -> list[int]:
        raise StoreError("COPY is a PostgreSQL capability (supports_copy is False)")

    def session(self, now: datetime | None) -> AbstractAsyncContextManager[Session]:
        # One connection already: each call is its own BEGIN IMMEDIATE write.
        return nullcontext(OneShot(self, now))

    async def in_transaction(self, now: datetime | None, body: Body[T]) -> T:
        def work(conn: sqlite3.Connection) -> T:
            with self._immediate(conn):
                return drive(body, _InThread(_ThreadSession(conn, instant)))

        instant = self._instant(now)
        return await self._call(work)

    async def in_serialised(self, now: datetime | None, body: Body[T]) -> T:
        # BEGIN IMMEDIATE already serialises every writer of the file.
        return await self.in_transaction(now, body)

    # -- housekeeping and wake-ups ----------------------------------------------
    async def vacuum(self) -> None:
        # SQLite reuses freed pages by itself; refreshing the planner's statistics is
        # what keeps the claim on its index. PRAGMA optimize reads, then writes: in
        # autocommit, with another process writing, SQLite refuses that write at once
        # ("database is locked", no busy wait), so under load it kept failing. Taking
        # the writer lock first makes it wait its turn like any write.
        def optimize(conn: sqlite3.Connection) -> None:
            with self._immediate(conn):
                conn.execute("PRAGMA optimize")

        await self._call(optimize)

    def runs_committed(self) -> None:
        # SQLite has no NOTIFY: the runs this process commits (the API's enqueues, the
        # embedded leader's planning in `rota server`) wake its idle worker directly.
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self._committed is None:
            if running is None:
                return
            # Before the worker's first wait: it finds the signal set when it waits.
            self._committed = (asyncio.Event(), running)
        event, loop = self._committed
        if running is loop:
            event.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    async def wait_for_work(self, timeout: float) -> None:
        # Other processes cannot notify: their runs are found by an indexed poll, which
        # is cheap. This process's own runs wake the worker at once (runs_committed).
        if self._committed is None:
            self._committed = (asyncio.Event(), asyncio.get_running_loop())
        event = self._committed[0]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), min(timeout, self.poll_seconds))
        event.clear()


def switch_to_wal(conn: sqlite3.Connection) -> None:
    """WAL mode, which a new database file is switched to by whichever process opens it
    first. SQLite answers "database is locked" at once, without its busy handler, to a
    connection that asks while another is switching the same file (processes started
    together on a fresh file: 16 of 200 tries with four threads here), so the question
    is asked again for as long as the busy timeout, after a short random pause."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.02))  # spread the retries apart
        else:
            return
