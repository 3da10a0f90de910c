"""One store per event loop, and the sync door into the async core.

A psycopg pool belongs to the event loop that opened it, so an ``App`` used from an
API server's loop, a worker's loop and plain scripts holds one store per loop. Plain
(sync) callers share a private event loop on a daemon thread: the same coroutine runs
there, so there is one implementation of each operation.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from rota.bootstrap import open_store
from rota.config import Settings
from rota.store.port import Store

T = TypeVar("T")


class _LoopThread:
    """An event loop on a daemon thread, for the sync doors into the async core."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="rota-sync", daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


class LoopStores:
    """The stores an App opened, one per event loop, each opened (and migrated) once
    even when many coroutines ask at the same time (an API server's first requests).

    ``settings`` is read when a store opens, so a caller that replaces the App's
    settings before first use (``rota worker --db``) is heeded."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._stores: dict[asyncio.AbstractEventLoop, asyncio.Task[Store]] = {}
        self._lock = threading.Lock()
        self._sync: _LoopThread | None = None

    async def store(self) -> Store:
        """The store for the running event loop, opened on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            opening = self._stores.get(loop)
            if opening is None:
                opening = loop.create_task(open_store(self._settings()), name="rota-open-store")
                # Its error reaches every caller; should they all be gone (cancelled),
                # it is still retrieved, never reported as "never retrieved".
                opening.add_done_callback(_retrieve_quietly)
                self._stores[loop] = opening
        try:
            return await asyncio.shield(opening)
        except BaseException:
            if opening.done():  # it failed to open: the next caller tries afresh
                with self._lock:
                    if self._stores.get(loop) is opening:
                        del self._stores[loop]
            raise

    def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on the private sync loop and return its result (blocking)."""
        with self._lock:
            if self._sync is None:
                self._sync = _LoopThread()
                # A script that never closes its App still ends quietly: without this,
                # the interpreter drops the sync loop with psycopg_pool's worker tasks
                # pending on it ("Task was destroyed but it is pending!"). A weak
                # reference, so the hook never keeps a forgotten App alive.
                _at_interpreter_exit(functools.partial(_close_at_exit, weakref.ref(self)))
            door = self._sync

        async def run() -> T:
            return await make()

        return door.call(run())

    def use(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run the use case ``fn(store, *args, **kwargs)`` from sync code."""

        async def go() -> T:
            return await fn(await self.store(), *args, **kwargs)

        return self.call(go)

    async def aclose(self) -> None:
        """Close the store of the running loop."""
        with self._lock:
            opening = self._stores.pop(asyncio.get_running_loop(), None)
        store = await _opened(opening)
        if store is not None:
            await store.close()

    def close(self) -> None:
        """Close the sync loop's store and stop its thread (again: nothing)."""
        if self._sync is not None:
            sync = self._sync
            with self._lock:
                opening = self._stores.pop(sync.loop, None)
            store = sync.call(_opened(opening))
            if store is not None:
                sync.call(store.close())
            sync.stop()
            self._sync = None


def _at_interpreter_exit(hook: Callable[[], None]) -> None:
    """Run ``hook`` as the interpreter exits, while thread pools still take work.

    ``atexit`` runs too late: by then concurrent.futures has shut its executors, which
    SQLite's store closes its connection on. ``threading._register_atexit`` (what
    concurrent.futures itself uses) runs first, hooks registered last first, so ours
    run before the executors stop. It has no unregister: a hook of an App closed by
    hand finds nothing left to close."""
    register = getattr(threading, "_register_atexit", atexit.register)
    register(hook)


def _close_at_exit(stores: weakref.ref[LoopStores]) -> None:
    alive = stores()
    if alive is not None:
        alive.close()


def _retrieve_quietly(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


async def _opened(opening: asyncio.Task[Store] | None) -> Store | None:
    """The store an opening task produced, if it did (waiting for it if it still runs)."""
    if opening is None:
        return None
    try:
        return await opening
    except Exception:  # noqa: BLE001 - it never opened: nothing to close
        return None
