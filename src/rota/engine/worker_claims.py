"""A worker's claim loop: claim batches sized to the free slots, and wait for work
(a wake-up, a run falling due, or the poll) when a claim finds none."""

from __future__ import annotations

import asyncio
from typing import Any

from rota.engine.worker_runs import WorkerRuns
from rota.errors import StoreError
from rota.observe import hooks
from rota.store.port import ClaimRequest
from rota.supervise import CANCEL_WAIT_SECONDS, cancel_and_wait

MAX_CLAIM_BATCH = 100
# SQLite's clock ('now') reads whole milliseconds: a claim sent just as a run falls due
# may not see it due yet. An idle worker's look-back (next_due_in's looked_ago) covers
# that much more, so such a run is claimed again at once, not a poll later (issue 25).
CLOCK_SLACK_SECONDS = 0.005


class ClaimLoop(WorkerRuns):
    """Claims as slots free up; waits for work when a claim finds none."""

    async def _claim_loop(self, stopping: asyncio.Task[Any]) -> None:
        backoff = 0.05
        while not stopping.done():
            if not self._may_claim.is_set():  # draining: finish what we hold, take nothing
                await self._first(stopping, self._may_claim.wait())
                continue
            free = self._room()
            if free <= 0:
                await self._first(stopping, self._wait_slot())
                continue
            claim_started = self.clock.monotonic()
            try:
                claimed = await self.store.claim(
                    ClaimRequest(
                        worker_id=self.options.node_id,
                        queues=self.queues,
                        limit=min(free, MAX_CLAIM_BATCH),
                        lease_seconds=self.settings.lease_seconds,
                        tags=self.options.tags,
                    ),
                    self.clock.db_now(),
                )
                backoff = 0.05
            except StoreError as exc:
                self._log.warning("claim failed; retrying", error=str(exc), backoff=backoff)
                await self._first(stopping, asyncio.sleep(backoff))
                backoff = min(backoff * 2, 5.0)
                continue
            hooks.runs_claimed(claimed)
            for run in claimed:
                self._start(run)
            # A claim that found runs is followed by another at once: more may be due (a
            # burst, or keyed runs the claim left, see Store.claim). Only an empty claim
            # means nothing is due, and only then does the worker wait.
            if not claimed:
                looked_ago = self.clock.monotonic() - claim_started + CLOCK_SLACK_SECONDS
                wait = await self._idle_wait(looked_ago)
                await self._first(stopping, self.store.wait_for_work(wait))
            elif len(claimed) < min(free, MAX_CLAIM_BATCH):
                # A short claim (an idle worker's pickup): let its handlers start before
                # the next claim is prepared. A full one (a drain) sends the next claim
                # first, so the database works on it while the handlers run.
                await asyncio.sleep(0)

    async def _idle_wait(self, looked_ago: float) -> float:
        """How long to wait for work: the poll interval, or less when a waiting run falls
        due sooner (runs planned ahead of their slot were notified when inserted, before
        they could be claimed). A run that fell due since the empty claim looked
        (``looked_ago`` seconds) counts as due now: it was in neither answer, and would
        otherwise wait a whole poll (issue 25)."""
        poll = self.settings.poll_seconds
        try:
            due_in = await self.store.next_due_in(
                self.queues, self.clock.db_now(), looked_ago=looked_ago
            )
        except StoreError:
            return poll
        return poll if due_in is None else min(poll, due_in)

    def _room(self) -> int:
        """How many runs to claim now: the free slots, but never more runs held (running
        or with an outcome still being written) than twice the concurrency. Without that
        cap a slow database lets held runs pile up, their renewals grow, and leases
        expire under load."""
        concurrency = self.options.concurrency
        return min(concurrency - self._busy, 2 * concurrency - len(self._held))

    @staticmethod
    async def _first(stopping: asyncio.Task[Any], awaitable: Any) -> None:
        """Wait for ``awaitable`` or for the stop signal, whichever comes first; an
        error of ``awaitable`` is raised here."""
        waiter = asyncio.ensure_future(awaitable)
        try:
            await asyncio.wait({waiter, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not waiter.done():
                await cancel_and_wait(waiter, CANCEL_WAIT_SECONDS)
        if waiter.done() and not waiter.cancelled():
            waiter.result()

    async def _wait_slot(self) -> None:
        await self._slot_freed.wait()
        self._slot_freed.clear()
