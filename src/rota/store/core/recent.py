"""A value read from the database at most once per ``ttl`` seconds: the limits, rates
and breaker rules the claim and the completion consult on every call, which change
rarely. ``forget()`` after this process changes one, so it sees its own write at once;
other processes see it within ``ttl``."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Recent(Generic[T]):
    def __init__(self, load: Callable[[], Awaitable[T]], ttl: float = 1.0) -> None:
        self._load = load
        self._ttl = ttl
        self._value: tuple[float, T] | None = None

    async def get(self) -> T:
        cached = self._value
        if cached is None or time.monotonic() - cached[0] > self._ttl:
            cached = (time.monotonic(), await self._load())
            self._value = cached
        return cached[1]

    def forget(self) -> None:
        self._value = None
