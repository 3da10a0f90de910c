"""Fault injection in-process: a real store underneath, with chosen methods made to
fail, hang or swallow a cancellation, so tests can provoke what a dropped connection or
a pool wait does to the code above the store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rota.errors import StoreUnavailable
from rota.store.port import Store


class FaultyStore:
    """Delegates everything to ``store``; methods given a fault misbehave first."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._faults: dict[str, Callable[..., Awaitable[Any]]] = {}
        self.calls: dict[str, int] = {}

    def fail(
        self, method: str, times: int | None = None, error: type[Exception] = StoreUnavailable
    ) -> None:
        """``method`` raises ``error`` ``times`` times (None: until healed)."""
        left = [times]

        async def fault(*args: Any, **kwargs: Any) -> Any:
            if left[0] is None or left[0] > 0:
                if left[0] is not None:
                    left[0] -= 1
                raise error(f"injected: {method} failed")
            return await getattr(self._store, method)(*args, **kwargs)

        self._faults[method] = fault

    def swallow_cancel(self, method: str, entered: asyncio.Event) -> None:
        """The next call of ``method`` waits until it is cancelled, then swallows the
        cancellation and carries on (asyncio ``wait_for`` on Python 3.11 does this when
        the pool hands over a connection just as the wait is cancelled)."""
        armed = [True]

        async def fault(*args: Any, **kwargs: Any) -> Any:
            if armed[0]:
                armed[0] = False
                entered.set()
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
            return await getattr(self._store, method)(*args, **kwargs)

        self._faults[method] = fault

    def heal(self, method: str) -> None:
        self._faults.pop(method, None)

    def __getattr__(self, name: str) -> Any:
        self.calls[name] = self.calls.get(name, 0) + 1
        fault = self._faults.get(name)
        if fault is not None:
            return fault
        return getattr(self._store, name)
