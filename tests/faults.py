"""Fault injection in-process: a real store underneath, with chosen methods made to
fail, hang or swallow a cancellation, so tests can provoke what a dropped connection or
a pool wait does to the code above the store."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
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

    # The store's other ports are the store itself, so their methods take faults too.
    @property
    def webhooks(self) -> FaultyStore:
        return self

    @property
    def events(self) -> FaultyStore:
        return self

    def __getattr__(self, name: str) -> Any:
        self.calls[name] = self.calls.get(name, 0) + 1
        fault = self._faults.get(name)
        if fault is not None:
            return fault
        return getattr(self._store, name)


def kill_inside_release(marks: Path) -> None:
    """Make this process SIGKILL itself inside the first transaction that releases a
    workflow step's children: after the parent's fenced write and every release write
    of that transaction, before its commit (a worker process calls this at import when
    a test asks, see tests/apps/proc_app.py). It writes ``dying-in-release`` to
    ``marks`` first, so the test knows where it died."""
    from rota.store.core import runs, workflows

    async def release_then_die(session: Any, run_ids: Iterable[int], map_max_items: int) -> None:
        ids = sorted(set(run_ids))
        await workflows.release_after(session, ids, map_max_items)
        if ids:
            with marks.open("a") as f:
                f.write(f"{' '.join(map(str, ids))} dying-in-release\n")
            os.kill(os.getpid(), signal.SIGKILL)

    runs.release_after = release_then_die  # type: ignore[assignment]
