"""A value read from the database at most once per ``ttl`` seconds: the limits, rates
and breaker rules the claim and the completion consult on every call, which change
rarely. ``forget()`` after this process changes one, so it sees its own write at once;
other processes see it within ``ttl`` plus one call.

A value older than ``ttl`` is still handed out while a fresh one is read in the
background: the claim of a run that just fell due never waits for three reads of
settings that almost never change (at 50 runs/s they cost every run that came due once a
second, and the first run after an idle spell, up to three round trips). Only a value
that is missing, forgotten, or older than ``STALE_LIMIT`` ttls (the reads kept failing)
is read before the call goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import structlog

T = TypeVar("T")
STALE_LIMIT = 10  # ttls: an older value is never handed out, it is read again first

log = structlog.get_logger("rota.store")


class Recent(Generic[T]):
    def __init__(
        self,
        load: Callable[[], Awaitable[T]],
        ttl: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._ttl = ttl
        self._monotonic = monotonic
        self._value: tuple[float, T] | None = None
        self._generation = 0  # moved by forget(): a read begun before it is not kept
        self._refresh: asyncio.Task[None] | None = None

    async def get(self) -> T:
        cached = self._value
        if cached is None:
            return await self._read()
        age = self._monotonic() - cached[0]
        if age > STALE_LIMIT * self._ttl:
            return await self._read()
        if age > self._ttl and self._refresh is None:
            self._refresh = asyncio.create_task(self._refresh_in_background())
        return cached[1]

    def forget(self) -> None:
        self._value = None
        self._generation += 1

    async def close(self) -> None:
        """Stop a background read (the store is closing)."""
        refresh, self._refresh = self._refresh, None
        if refresh is not None:
            refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresh

    async def _read(self) -> T:
        generation, read_at = self._generation, self._monotonic()
        value = await self._load()
        if generation == self._generation:
            self._value = (read_at, value)
        return value

    async def _refresh_in_background(self) -> None:
        try:
            await self._read()
        except Exception as exc:  # noqa: BLE001 - the old value stands; the next call retries
            log.warning("could not refresh a cached setting", error=str(exc))
        finally:
            self._refresh = None
