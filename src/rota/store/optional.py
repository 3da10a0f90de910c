"""Optional ports: what only some dialects can do, as typed Protocols.

:mod:`rota.bootstrap` hands them out (or None) from the capability flags set when a
store opens and from the database URL; nothing else asks a store what it can do.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from rota.domain.events import NewEvent, Published, WorkflowStarts
from rota.domain.runs import Enqueued, NewRun, Outcome


class HandlerTransaction(Protocol):
    """A transaction lent to a handler; it commits only together with the run's outcome."""

    connection: Any

    async def commit_with(self, outcome: Outcome, aging_now: datetime | None) -> bool: ...

    def broke_under(self, error: BaseException) -> bool: ...

    async def rollback(self) -> None: ...


class HandlerTransactions(Protocol):
    """``ctx.transaction()``: a handler's writes and its completion commit together."""

    async def begin_handler_transaction(self) -> HandlerTransaction: ...


class CallerConnectionEnqueue(Protocol):
    """``app.enqueue(..., connection=conn)``: the run is inserted inside the caller's
    transaction and exists only if the caller commits."""

    async def enqueue_on(
        self, connection: Any, runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]: ...

    def enqueue_on_sync(self, connection: Any, run: NewRun, now: datetime | None) -> int: ...


class CallerConnectionPublish(Protocol):
    """``app.publish(..., connection=conn)``: the event and its subscribers' runs are
    written inside the caller's transaction and exist only if the caller commits."""

    async def publish_on(
        self,
        connection: Any,
        event: NewEvent,
        now: datetime | None,
        starts: WorkflowStarts | None = None,
    ) -> Published: ...

    def publish_on_sync(
        self,
        connection: Any,
        event: NewEvent,
        now: datetime | None,
        starts: WorkflowStarts | None = None,
    ) -> Published: ...
