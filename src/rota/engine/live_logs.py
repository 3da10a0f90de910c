"""A running attempt's log lines, written while it runs (so the dashboard can tail them).

A handler's ``ctx.log`` keeps its lines until they are taken. This task takes them in
small batches: woken by the first line waiting (never by a timer), it gathers for up to
``interval`` seconds, or until one attempt has ``LIVE_BATCH_LINES`` waiting, then writes
every waiting line of every attempt in one fenced statement. A run that logs nothing
costs nothing; a stale attempt's lines are refused by the fence. The lines an attempt
logs last go with its outcome (rota.engine.outcomes), after any batch still being written here
(``settled``), so each line is stored once and in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from rota.context import RunLogger
from rota.errors import StoreError
from rota.store.port import Store

log = structlog.get_logger("rota.engine.live_logs")
LIVE_INTERVAL_SECONDS = 0.5


@dataclass(frozen=True)
class LiveAttempt:
    """An attempt whose lines may be written now: its run, fence and logger."""

    run_id: int
    fence: int
    logger: RunLogger


class LiveLogs:
    def __init__(
        self,
        store: Store,
        attempts: Callable[[], Iterable[LiveAttempt]],
        interval: float = LIVE_INTERVAL_SECONDS,
    ) -> None:
        self._store = store
        self._attempts = attempts
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._full = asyncio.Event()
        self._writing: asyncio.Future[None] | None = None
        self.batches_written = 0  # statements issued (for tests and metrics)

    def watch(self, logger: RunLogger) -> None:
        """Have ``logger``'s waiting lines written while its attempt runs."""
        logger.on_waiting = self._waiting

    def _waiting(self, full: bool) -> None:
        # Sync handlers log from a worker thread: the events belong to the loop.
        event = self._full if full else self._wake
        if threading.get_ident() == self._loop_thread:
            event.set()
            return
        # A thread still logging after its worker stopped finds the loop closed: its
        # lines then wait for nobody, and the handler must not fail for it.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(event.set)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._full.is_set():
                # More lines, of this attempt and others, ride in the same statement.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._full.wait(), self._interval)
            self._full.clear()
            await self.flush()

    async def flush(self) -> None:
        """Write the lines waiting now (one statement, none if nothing waits)."""
        lines, fences = [], {}
        for attempt in self._attempts():
            if attempt.logger.waiting:
                taken = attempt.logger.take()
                lines += taken
                fences[attempt.run_id] = attempt.fence
        if not lines:
            return
        self._writing = done = self._loop.create_future()
        try:
            await self._store.append_logs(lines, fences)
            self.batches_written += 1
        except StoreError as exc:
            # Not retried: a write that broke mid-way may have landed, and a line must
            # not be stored twice. The run's outcome is unaffected.
            log.warning(
                "could not store running attempts' log lines", count=len(lines), error=str(exc)
            )
        finally:
            done.set_result(None)
            if self._writing is done:
                self._writing = None

    @property
    def writing(self) -> bool:
        """Whether a batch is being written now (checked before awaiting ``settled``:
        the common case, nothing in flight, costs no await)."""
        return self._writing is not None

    async def settled(self) -> None:
        """Return once no batch taken earlier is still being written."""
        if self._writing is not None:
            await asyncio.shield(self._writing)
