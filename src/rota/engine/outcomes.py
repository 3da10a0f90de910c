"""Batched, fenced outcome recording ("group commit").

Finished runs queue their outcome here; one task writes whatever has queued up in a
single statement, so a busy worker completes hundreds of runs per round trip and an idle
one writes each at once. A write that failed because the connection broke is ambiguous
(it may have committed): it is retried, and outcomes the retry finds already gone are
checked against the attempt history, so an outcome is recorded once, never twice.

Two ways in: :meth:`OutcomeWriter.record` awaits one outcome's answer; the worker's hot
path :meth:`OutcomeWriter.submit`s and learns the answers of a whole batch at once from
``settled`` (no future, no task woken per run: about a fifth of a no-op run's worker
CPU went to waking each run's task for its answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from rota.domain.runs import Lease, LogLine, Outcome
from rota.errors import StoreError, StoreUnavailable
from rota.store.port import Store
from rota.supervise import CANCEL_WAIT_SECONDS, Restarts, cancel_and_wait, supervise, watched

log = structlog.get_logger("rota.engine.outcomes")
MAX_BATCH = 500


# Told once per written batch: the tokens submitted with its outcomes, with the run ids
# written (an outcome missing from them met a stale fence), or the error that stopped
# the batch (the runs' leases then expire and they are reaped and retried).
Settled = Callable[[Sequence[Any], "set[int] | BaseException"], None]


@dataclass(slots=True)
class _Pending:
    outcome: Outcome
    lines: list[LogLine]
    written: asyncio.Future[bool] | None  # record()'s caller waits on it
    token: Any = None  # submit()'s: handed to ``settled`` with the batch


def _ignore(tokens: Sequence[Any], written: set[int] | BaseException) -> None:
    pass


class OutcomeWriter:
    def __init__(
        self,
        store: Store,
        db_now: Callable[[], datetime | None],
        restarts: Restarts | None = None,
        settled: Settled = _ignore,
    ) -> None:
        self._store = store
        self._db_now = db_now
        self._restarts = restarts or Restarts()
        self._settled = settled
        self._queue: list[_Pending] = []
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def start(self) -> None:
        self._task = watched(supervise("outcomes", self._run, self._restarts), "rota-outcomes")

    async def record(self, outcome: Outcome, lines: list[LogLine]) -> bool:
        """Queue an outcome; True once written, False if its fence was stale."""
        written: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(outcome, lines, written))
        self._ready.set()
        return await written

    def submit(self, outcome: Outcome, lines: list[LogLine], token: Any) -> None:
        """Queue an outcome without waiting: ``settled`` gets ``token`` with the answer
        of the batch that writes it."""
        self._queue.append(_Pending(outcome, lines, None, token))
        self._ready.set()

    async def settle(self, outcome: Outcome, fallback: Outcome) -> bool:
        """A commit of ``outcome`` broke mid-way (it may have landed or not). Once the
        database answers: True if it landed; if not, record ``fallback`` (same fence)
        instead. Either way the run is settled now, not when its lease runs out."""
        delay = 0.05
        while True:
            try:
                landed = await self._store.recorded_outcomes([outcome])
            except StoreUnavailable as exc:
                log.warning("checking an interrupted commit failed; retrying", error=str(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if outcome.run_id in landed:
                return True
            return await self.record(fallback, [])

    async def store_logs(self, lease: Lease, lines: list[LogLine]) -> None:
        """Lines of a run whose outcome is not ours to write (it was committed with the
        handler's transaction), under the attempt's fence."""
        if lines:
            with contextlib.suppress(StoreError):
                await self._store.append_logs(lines, {lease.run_id: lease.fence})

    async def close(self, timeout: float = 10.0) -> None:
        """Write everything queued, then stop. Bounded: with the database down, what is
        still queued after ``timeout`` is dropped, and those runs are reaped and re-run
        (at-least-once), never recorded twice."""
        self._closing = True
        self._ready.set()
        task = self._task
        if task is None:
            task = self._task = watched(self._run(), "rota-outcomes")
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            log.warning("outcomes not written before shutdown", count=len(self._queue))
            await cancel_and_wait(task, CANCEL_WAIT_SECONDS)
            left, self._queue = self._queue, []
            self._tell(left, asyncio.CancelledError())  # their runs are let go unrecorded

    async def _run(self) -> None:
        while True:
            if not self._queue and not self._closing:  # a restarted loop may find some
                await self._ready.wait()
            self._ready.clear()
            while self._queue:
                await self._flush()
            if self._closing:
                return

    async def _flush(self) -> None:
        batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        outcomes = [p.outcome for p in batch]
        try:
            written = await self._write(outcomes)
        except BaseException as exc:
            # Refused (not unreachable), or cancelled at shutdown: the runs waiting on
            # this batch learn it, rather than waiting for ever; their leases expire
            # and the runs are reaped and retried.
            for p in batch:
                if p.written is None or p.written.done():
                    continue
                if isinstance(exc, asyncio.CancelledError):
                    p.written.cancel()
                else:
                    p.written.set_exception(exc)
                    p.written.exception()  # retrieved here; the waiter sees it too
            self._tell(batch, exc)
            raise
        # Only the lines of outcomes that held their fence: a stale attempt's are not
        # the run's.
        kept = [p for p in batch if p.lines and p.outcome.run_id in written]
        lines = [line for p in kept for line in p.lines]
        if lines:
            try:
                fences = {p.outcome.run_id: p.outcome.fence for p in kept}
                await self._store.append_logs(lines, fences)
            except StoreError as exc:
                log.warning("could not store run log lines", count=len(lines), error=str(exc))
        for p in batch:
            if p.written is not None and not p.written.done():
                p.written.set_result(p.outcome.run_id in written)
        self._tell(batch, written)

    def _tell(self, batch: list[_Pending], written: set[int] | BaseException) -> None:
        tokens = [p.token for p in batch if p.written is None]
        if tokens:
            self._settled(tokens, written)

    async def _write(self, outcomes: list[Outcome]) -> set[int]:
        delay = 0.05
        ambiguous = False
        while True:
            try:
                written = await self._store.complete(outcomes, self._db_now())
                unsure = [o for o in outcomes if o.run_id not in written] if ambiguous else []
                if unsure:
                    written |= await self._store.recorded_outcomes(unsure)
            except StoreUnavailable as exc:
                ambiguous = True
                log.warning("recording outcomes failed; retrying", error=str(exc), delay=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            else:
                return written
