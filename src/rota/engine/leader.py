"""Leader election by a lease row. The term only grows; it is the leader's fencing token.

Every node may stand. The holder renews every ttl/3; when its lease lapses (crash,
pause, partition), the next node to ask after expiry takes over with term + 1. Duties
(planner, reaper, retention) run only while leading, and their writes name the term,
so a deposed leader that has not noticed yet changes nothing.

The elector watches its duties: duties that stopped while the node still leads (they
kept failing) make it resign, so another node leads instead of nobody, and it stands
again after a pause. Losing the lease cancels the duties with a bounded wait, and the
duties check on every turn that their term is still the elector's, so a duties task
that swallowed its cancellation cannot wedge the elector or outlive its term.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from rota.clock import Clock
from rota.errors import StoreError, StoreUnavailable
from rota.observe import hooks
from rota.store.port import Store
from rota.supervise import Reachability, Sleep, cancel_and_wait

log = structlog.get_logger("rota.engine.leader")
# duties(term, still_leading): run the leader's work until still_leading() is False.
Duties = Callable[[int, Callable[[], bool]], Coroutine[Any, Any, None]]


class LeaderElector:
    def __init__(
        self,
        store: Store,
        node_id: str,
        lease_seconds: float,
        clock: Clock,
        *,
        sleep: Sleep = asyncio.sleep,
        cancel_wait_seconds: float | None = None,
        reachability: Reachability | None = None,
    ) -> None:
        self.store = store
        self.reachability = reachability or Reachability()
        self.node_id = node_id
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.sleep = sleep
        # How long to wait for cancelled duties to end before moving on without them.
        self.cancel_wait_seconds = (
            lease_seconds / 3 if cancel_wait_seconds is None else cancel_wait_seconds
        )
        self.term: int | None = None
        self.changes = 0  # times this node gained or lost leadership
        self.resignations = 0  # times it gave the lease up because its duties failed

    def holds(self, term: int) -> bool:
        """Whether this node still leads in ``term`` (as far as it knows)."""
        return self.term == term

    async def attempt(self) -> int | None:
        """Acquire or renew; the term while leading, None otherwise."""
        try:
            term = await self.store.acquire_leadership(
                self.node_id, self.term, self.lease_seconds, self.clock.db_now()
            )
        except StoreError as exc:  # unreachable included: we cannot know we still lead
            log.warning("leader lease check failed", node_id=self.node_id, error=str(exc))
            if isinstance(exc, StoreUnavailable):
                self.reachability.unreachable()
            term = None
        else:
            self.reachability.reachable(self.clock.monotonic())
        if term != self.term:
            self.changes += 1
            # A term held is lost even when a new one is won in the same check (a node
            # paused past its lease that finds the lease free again on waking): the old
            # term's duties are cancelled either way, and an operator should see why.
            if self.term is not None:
                log.warning("leadership lost", node_id=self.node_id, term=self.term)
            if term is not None:
                log.info(
                    "leadership acquired", node_id=self.node_id, term=term, previous_term=self.term
                )
        hooks.leadership(self.node_id, term, changed=term != self.term)
        self.term = term
        return term

    async def resign(self) -> None:
        if self.term is not None:
            term, self.term = self.term, None  # the duties see it at once
            with contextlib.suppress(StoreError):
                await self.store.resign_leadership(self.node_id, term, self.clock.db_now())
            log.info("leadership released", node_id=self.node_id, term=term)

    async def run(self, duties: Duties) -> None:
        """Stand for leader until cancelled; run ``duties(term, still_leading)`` while
        leading."""
        running: asyncio.Task[None] | None = None
        running_term: int | None = None
        try:
            while True:
                term = await self.attempt()
                if running is not None and running.done() and term == running_term:
                    await self._step_down(running, running_term)
                    running = None
                    await self.sleep(self.lease_seconds)  # let another node take over
                    continue
                if running is not None and (running.done() or term != running_term):
                    await cancel_and_wait(running, self.cancel_wait_seconds)
                    running = None
                if term is not None and running is None:
                    still_leading = functools.partial(self.holds, term)
                    running = asyncio.create_task(
                        duties(term, still_leading), name=f"rota-leader-duties-{term}"
                    )
                    running_term = term
                await self.sleep(self.lease_seconds / 3)
        finally:
            await cancel_and_wait(running, self.cancel_wait_seconds)
            await self.resign()

    async def _step_down(self, duties: asyncio.Task[None], term: int | None) -> None:
        """The duties ended while this node leads: they cannot run here. Holding the
        lease idle would stop planning and reaping for the whole cluster."""
        self.resignations += 1
        error = None if duties.cancelled() else duties.exception()
        log.error(
            "leader duties stopped; resigning so another node can lead",
            node_id=self.node_id,
            term=term,
            exc_info=error,
        )
        await self.resign()
