"""A read shared by every request of a process: made at most once per ``fresh``
seconds, and requests that find it stale while a read is in flight wait for that read
instead of making their own. After a change, a hundred open overviews re-fetch at once;
this makes that one read of the cluster's counts, not a hundred.

A value a little past ``fresh`` (up to ``stale_for`` seconds more) is still served at
once, while the new read is made behind the request: a page never waits on a read whose
cost grows with the cluster (the live counts take ~60 ms over 200,000 waiting runs and
100,000 dead letters), except the first read, and a page opened after a long quiet
spell, which wait as before. The change feed asks with ``fresh=0.0`` and always waits
for a new reading, so an open page is corrected within one feed interval."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from rota.supervise import watched

T = TypeVar("T")


class Shared(Generic[T]):
    def __init__(
        self,
        read: Callable[[], Awaitable[T]],
        fresh: float,
        monotonic: Callable[[], float],
        stale_for: float = 0.0,
    ) -> None:
        self._read = read
        self.fresh = fresh
        self.stale_for = stale_for
        self._monotonic = monotonic
        self._value: tuple[float, T] | None = None
        self._in_flight: asyncio.Task[T] | None = None
        self.reads = 0

    async def get(self, fresh: float | None = None) -> T:
        """The value, read at most ``fresh`` seconds ago (default: this one's; then a
        value up to ``stale_for`` older is returned while a new one is read)."""
        limit = self.fresh if fresh is None else fresh
        if self._value is not None:
            age = self._monotonic() - self._value[0]
            if age < limit:
                return self._value[1]
            if fresh is None and age < limit + self.stale_for:
                self._refresh_behind()
                return self._value[1]
        # shield: one waiter leaving (its page closed) must not cancel the others' read.
        return await asyncio.shield(self._refresh_behind())

    def _refresh_behind(self) -> asyncio.Task[T]:
        """The read in flight, started if there is none (its failure is logged even if
        no request waits for it; the value kept is then the last good one)."""
        if self._in_flight is None:
            self._in_flight = watched(self._refresh(), "rota-dashboard-shared-read")
        return self._in_flight

    async def _refresh(self) -> T:
        try:
            started = self._monotonic()
            value = await self._read()
            self.reads += 1
            self._value = (started, value)
            return value
        finally:
            self._in_flight = None
