"""Leader election by a lease row. The term only grows; it is the leader's fencing token.

Every node may stand. The holder renews every ttl/3; when its lease lapses (crash,
pause, partition), the next node to ask after expiry takes over with term + 1. Duties
(planner, reaper, retention) run only while leading, and their writes name the term,
so a deposed leader that has not noticed yet changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from rota.clock import Clock
from rota.errors import StoreError
from rota.store.port import Store

log = structlog.get_logger("rota.leader")
Duties = Callable[[int], Coroutine[Any, Any, None]]


class LeaderElector:
    def __init__(self, store: Store, node_id: str, lease_seconds: float, clock: Clock) -> None:
        self.store = store
        self.node_id = node_id
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.term: int | None = None
        self.changes = 0  # times this node gained or lost leadership

    async def attempt(self) -> int | None:
        """Acquire or renew; the term while leading, None otherwise."""
        try:
            term = await self.store.acquire_leadership(
                self.node_id, self.term, self.lease_seconds, self.clock.db_now()
            )
        except StoreError as exc:
            log.warning("leader lease check failed", node_id=self.node_id, error=str(exc))
            term = None
        if term != self.term:
            self.changes += 1
            if term is None:
                log.warning("leadership lost", node_id=self.node_id, term=self.term)
            else:
                log.info(
                    "leadership acquired", node_id=self.node_id, term=term, previous_term=self.term
                )
        self.term = term
        return term

    async def resign(self) -> None:
        if self.term is not None:
            with contextlib.suppress(StoreError):
                await self.store.resign_leadership(self.node_id, self.term, self.clock.db_now())
            log.info("leadership released", node_id=self.node_id, term=self.term)
            self.term = None

    async def run(self, duties: Duties) -> None:
        """Stand for leader until cancelled; run ``duties(term)`` while leading."""
        running: asyncio.Task[None] | None = None
        running_term: int | None = None
        try:
            while True:
                term = await self.attempt()
                if term != running_term and running is not None:
                    running.cancel()
                    await asyncio.gather(running, return_exceptions=True)
                    running = None
                if term is not None and running is None:
                    running = asyncio.create_task(duties(term), name="rota-leader-duties")
                running_term = term if running is not None else None
                await asyncio.sleep(self.lease_seconds / 3)
        finally:
            if running is not None:
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)
            await self.resign()
