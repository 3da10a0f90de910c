"""The dialect seam: the little that differs between SQLite and PostgreSQL.

:class:`~rota.store.sql_store.SqlStore` implements the store port once over this seam.
A dialect runs *named* queries (``sql/<dialect>/*.sql``, one name set for both) and
hands rows back as dicts whose instants are aware datetimes and whose JSON and array
columns are Python values; it encodes parameters the same way in reverse (datetimes,
lists). Every query may use ``now``: a dialect binds the caller's instant, or lets the
database clock decide (PostgreSQL's SQL coalesces; SQLite reads its clock once per
transaction and binds it).

What stays per dialect: connections (pools, the SQLite thread, PRAGMAs, session
limits), migrations, SQL text, COPY and LISTEN/NOTIFY behind their capability flags,
and how a batch is written (arrays and ``unnest`` on PostgreSQL; inside ``BEGIN
IMMEDIATE`` on SQLite, a JSON array read with ``json_each`` for a query that reads
``:items``, else one statement per item).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

from rota.domain.runs import NewRun
from rota.errors import StoreError

T = TypeVar("T")
Row = dict[str, Any]
Params = Mapping[str, Any]
Items = Sequence[Params]
Instant = datetime | None  # None: the database clock decides
NO_PARAMS: Params = {}
# What runs inside a transaction: it awaits only the session it is given.
Body = Callable[["Session"], Awaitable[T]]


class ClaimLockBusy(StoreError):
    """Another claimer held the limited-claim lock past the wait a claim allows; the
    claim takes nothing this time (its next poll tries again)."""


class Session(Protocol):
    """One connection, usually inside a transaction opened by the dialect."""

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        """Run a named query; its rows (none for a statement without a result)."""

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        """The last statement of the transaction: as :meth:`rows`. A dialect may send the
        COMMIT with it (PostgreSQL's in_serialised does, so that a lock the transaction
        holds is let go without waiting on this process); elsewhere the transaction's
        owner commits after the body, as always."""

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        """Run a named query for every item (each item's parameters plus ``shared``)
        as one write; the rows of all items."""

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        """Write unkeyed runs with COPY; their ids in input order. Only a dialect with
        ``supports_copy`` has it."""


class Dialect(Protocol):
    name: str
    # Capabilities, set once when the dialect is made: the core tests a flag, never a
    # type or a URL.
    supports_notify: bool  # LISTEN/NOTIFY wakes idle workers (else they poll often)
    supports_copy: bool  # large unkeyed batches are written with COPY
    supports_handler_transactions: bool  # ctx.transaction() commits with the outcome
    # An idle claim reads first whether anything is due: on SQLite every write takes
    # the one writer lock, and an idle poll must not (PostgreSQL claims with SKIP
    # LOCKED in one statement; a read first would only add a round trip).
    claims_read_first: bool

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def schema_version(self) -> int:
        """The migration version the database is at (0 for an empty one)."""

    async def migrate(self) -> list[int]:
        """Apply pending migrations; the versions applied."""

    async def rows(
        self, query: str, params: Params = NO_PARAMS, now: datetime | None = None
    ) -> list[Row]:
        """Read (or one self-contained write on PostgreSQL) in one round trip."""

    async def write(
        self, query: str, params: Params = NO_PARAMS, now: datetime | None = None
    ) -> list[Row]:
        """One named query as a write transaction of its own."""

    async def batch(self, query: str, items: Items, shared: Params, now: Instant) -> list[Row]:
        """:meth:`Session.batch` as a write transaction of its own."""

    async def copy_runs(
        self, runs: Sequence[NewRun], aging_seconds: float, now: datetime | None
    ) -> list[int]:
        """:meth:`Session.copy_runs` as a write of its own (``supports_copy`` only)."""

    def session(self, now: Instant) -> AbstractAsyncContextManager[Session]:
        """Several statements on one connection, each a write of its own (no transaction
        around them): one pool checkout on PostgreSQL, one BEGIN IMMEDIATE per call on
        SQLite (:class:`OneShot`)."""

    async def in_transaction(self, now: Instant, body: Body[T]) -> T:
        """Run ``body`` in one write transaction; every query in it sees the same
        ``now``. On SQLite the whole body runs in one call on the store's thread (it
        may await only its session), so the writer lock is never held across the
        event loop: a process paused there would stall every other one. On PostgreSQL
        the body runs again after a serialization failure (a row it writes was moved
        between the two homes by a statement that committed meanwhile, ADR 0027), so
        a body keeps what it learns in its return value, never in a list outside it."""

    async def in_serialised(self, now: Instant, body: Body[T]) -> T:
        """:meth:`in_transaction`, and no other serialised one (in any process)
        overlaps it: the limited claim counts what runs and claims within the limits
        in one step. Raises ClaimLockBusy when another holder does not let go in time."""

    async def vacuum(self) -> None: ...

    async def wait_for_work(self, timeout: float) -> None: ...

    def runs_committed(self) -> None:
        """This process committed new runs: wake its idle worker now (a no-op where the
        database itself notifies, as PostgreSQL does by trigger)."""


class OneShot:
    """A session whose every call is a write of its own (one round trip, or one hop to
    SQLite's thread): the hot path needs no transaction around a single statement."""

    def __init__(self, dialect: Dialect, now: datetime | None) -> None:
        self._d = dialect
        self._now = now

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        return await self._d.write(query, params, self._now)

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        return await self.rows(query, params)  # each statement commits by itself

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        return await self._d.batch(query, items, shared, self._now)

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        return await self._d.copy_runs(runs, aging_seconds, self._now)


def drive(body: Body[T], session: Session) -> T:
    """Run ``body`` to its end here, synchronously: it awaits only ``session``, whose
    calls never suspend (SQLite's thread, a caller's plain psycopg connection). Anything
    else it awaited would need an event loop this thread does not run: that is a bug,
    said as such."""
    coroutine = body(session)
    try:
        coroutine.send(None)  # type: ignore[attr-defined]
    except StopIteration as finished:
        result: T = finished.value
        return result
    coroutine.close()  # type: ignore[attr-defined]
    raise StoreError("a synchronous transaction awaited something other than its session")
