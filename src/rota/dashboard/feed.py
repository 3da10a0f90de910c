"""The change feed: one poller per server process, fanned out to every open page.

While at least one page listens, a supervised task reads a cheap signature of the
runs (reads.change_signature: two index-only queries) every ``interval`` seconds; when
it differs from the last one the feed's version moves on and every listener is woken.
A hundred open tabs are a hundred listeners on one poller, never a hundred pollers.
With no listener left, the poller ends by itself at its next turn.

Event ids are ``<epoch>.<version>``, the epoch being this process's: a reconnecting
page sends the last id it saw (Last-Event-ID) and is told to refresh at once if
anything changed meanwhile, or if it was talking to another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable

import structlog

from rota.supervise import CANCEL_WAIT_SECONDS, Restarts, cancel_and_wait, every, watched

TASK = "rota-dashboard-change-feed"
COST_FACTOR = 5
log = structlog.get_logger("rota.dashboard")


class ChangeFeed:
    def __init__(
        self,
        read_signature: Callable[[], Awaitable[Hashable]],
        interval: float,
        restarts: Restarts,
    ) -> None:
        self._read = read_signature
        self.interval = interval
        self._restarts = restarts
        self._epoch = secrets.token_hex(4)
        self._version = 0
        self._signature: Hashable = None
        self._changed = asyncio.Event()
        self._listeners = 0
        self._task: asyncio.Task[None] | None = None
        self.reads = 0  # signature reads made (what the fan-out test counts)
        self._backoff = 0.0  # added to the interval while a reading is dear
        self._closing = False

    @property
    def event_id(self) -> str:
        return f"{self._epoch}.{self._version}"

    @property
    def listeners(self) -> int:
        return self._listeners

    @property
    def polling(self) -> bool:
        """Whether the poller runs (it ends by itself after its last listener left)."""
        return self._task is not None and not self._task.done()

    async def changes(
        self, last_event_id: str | None, keepalive: float
    ) -> AsyncIterator[str | None]:
        """Yield the new event id after each change (and at once if ``last_event_id``
        is behind), or None after ``keepalive`` seconds without one."""
        self._listeners += 1
        self._start()
        try:
            seen = last_event_id or self.event_id
            while not self._closing:
                if seen != self.event_id:
                    seen = self.event_id
                    yield seen
                    continue
                changed = self._changed
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(keepalive):
                        await changed.wait()
                if seen == self.event_id and not self._closing:
                    yield None
        finally:
            self._listeners -= 1

    def close_streams(self) -> None:
        """End every listener's stream (the server is shutting down: it waits for open
        responses, and an event stream never ends by itself). Browsers reconnect to
        whichever server answers next and catch up from their Last-Event-ID."""
        self._closing = True
        woken, self._changed = self._changed, asyncio.Event()
        woken.set()

    async def aclose(self) -> None:
        await cancel_and_wait(self._task, CANCEL_WAIT_SECONDS, TASK)
        self._task = None

    def _start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        self._signature = None  # what happened while no one listened counts as a change
        self._task = watched(
            every(
                TASK,
                self.interval,
                self._poll,
                self._restarts,
                keep_going=lambda: self._listeners > 0,
                first_now=True,
                sleep=self._sleep,
            ),
            name=TASK,
        )

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds + self._backoff)

    async def _poll(self) -> None:
        started = asyncio.get_running_loop().time()
        signature = await self._read()
        self.reads += 1
        # On a big table the reading itself gets dear: then poll less often, so the
        # feed never spends more than a fifth of a connection's time reading.
        spent = asyncio.get_running_loop().time() - started
        if spent * COST_FACTOR > self.interval:
            self._backoff = spent * COST_FACTOR - self.interval
        else:
            self._backoff = 0.0
        if signature == self._signature:
            return
        # A poller's first reading counts as a change too: what happened while no one
        # listened (after a page was rendered, before its feed connected) is not lost.
        self._signature = signature
        self._version += 1
        woken, self._changed = self._changed, asyncio.Event()
        woken.set()
