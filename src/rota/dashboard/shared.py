"""A read shared by every request of a process: made at most once per ``fresh``
seconds, and requests that find it stale while a read is in flight wait for that read
instead of making their own. After a change, a hundred open overviews re-fetch at once;
this makes that one read of the cluster's counts, not a hundred."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from rota.supervise import watched

T = TypeVar("T")


class Shared(Generic[T]):
    def __init__(
        self, read: Callable[[], Awaitable[T]], fresh: float, monotonic: Callable[[], float]
    ) -> None:
        self._read = read
        self.fresh = fresh
        self._monotonic = monotonic
        self._value: tuple[float, T] | None = None
        self._in_flight: asyncio.Task[T] | None = None
        self.reads = 0

    async def get(self, fresh: float | None = None) -> T:
        """The value, read at most ``fresh`` seconds ago (default: this one's)."""
        limit = self.fresh if fresh is None else fresh
        if self._value is not None and self._monotonic() - self._value[0] < limit:
            return self._value[1]
        if self._in_flight is None:
            self._in_flight = watched(self._refresh(), "rota-dashboard-shared-read")
        # shield: one waiter leaving (its page closed) must not cancel the others' read.
        return await asyncio.shield(self._in_flight)

    async def _refresh(self) -> T:
        try:
            started = self._monotonic()
            value = await self._read()
            self.reads += 1
            self._value = (started, value)
            return value
        finally:
            self._in_flight = None
