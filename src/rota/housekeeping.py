"""The leader's duties: plan schedule slots into runs, declare silent workers dead,
return runs whose lease expired, cancel runs past their start-by deadline, report runs
no worker can take, prune old finished runs and dead workers.

Every write names the leader's term, so a leader that was deposed while it worked
changes nothing. Each duty is also safe to run on several nodes at once (the planner by
compare-and-set, the reaper by SKIP LOCKED / BEGIN IMMEDIATE, pruning by id), so a
brief overlap of two leaders does no harm.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

import structlog

from rota.clock import Clock
from rota.config import Settings
from rota.domain.runs import ReapedRun
from rota.errors import StoreError
from rota.planner import Planner, TickReport
from rota.store.port import Store

log = structlog.get_logger("rota.housekeeping")
REAP_BATCH = 1000
PRUNE_BATCH = 5000
PRUNE_EVERY_SECONDS = 60.0


class Housekeeper:
    def __init__(self, store: Store, settings: Settings, clock: Clock) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.planner = Planner(store, timedelta(seconds=settings.planner_horizon_seconds))

    async def plan_once(self, term: int | None = None) -> TickReport:
        now = await self.store.now(self.clock.db_now())
        return await self.planner.tick(now, term)

    async def reap_once(self, term: int | None = None) -> list[ReapedRun]:
        reaped = await self.store.reap_expired(
            self.clock.db_now(), self.settings.poison_after, REAP_BATCH, term
        )
        for run in reaped:
            log.warning(
                "lease expired; run taken back", run_id=run.run_id, fence=run.fence, state=run.state
            )
        return reaped

    async def bury_dead_workers(self, term: int | None = None) -> list[str]:
        """Workers whose heartbeats stopped: dead, and their leases end now, so the
        reap that follows takes their runs back without waiting out each lease."""
        dead = await self.store.mark_dead_workers(
            self.settings.worker_dead_seconds, self.clock.db_now(), term
        )
        for node_id in dead:
            log.warning("worker stopped heartbeating; declared dead", node_id=node_id)
        return dead

    async def expire_deadlines(self, term: int | None = None) -> list[int]:
        expired = await self.store.expire_deadlines(self.clock.db_now(), term)
        if expired:
            log.warning("runs not started by their deadline were cancelled", run_ids=expired)
        return expired

    async def report_unclaimable(self) -> None:
        for run in await self.store.unclaimable_runs(self.clock.db_now(), 20):
            log.warning(
                "no live worker has the tags this run needs",
                run_id=run.run_id,
                queue=run.queue,
                tags=list(run.tags),
            )

    async def prune_once(self, term: int | None = None) -> int:
        now = await self.store.now(self.clock.db_now())
        cutoff = now - timedelta(seconds=self.settings.retention_seconds)
        await self.store.prune_workers(cutoff)
        return await self.store.prune_finished(cutoff, PRUNE_BATCH, term)

    async def _reap_cycle(self, term: int | None) -> None:
        await self.bury_dead_workers(term)  # first, so their runs are reaped right after
        await self.reap_once(term)
        await self.expire_deadlines(term)

    async def _prune_cycle(self, term: int | None) -> None:
        await self.report_unclaimable()
        pruned = await self.prune_once(term)
        if pruned:
            log.info("pruned finished runs", count=pruned)

    async def _vacuum(self, term: int | None) -> None:
        await self.store.vacuum()

    async def run(self, term: int | None = None) -> None:
        """Loop over the duties, each at its own pace, until cancelled (when leadership
        is lost). A failing duty is logged and tried again at its next turn."""
        duties: list[tuple[float, Callable[[int | None], Awaitable[object]]]] = [
            (self.settings.planner_interval_seconds, self.plan_once),
            (self.settings.reap_interval_seconds, self._reap_cycle),
            (PRUNE_EVERY_SECONDS, self._prune_cycle),
            (self.settings.vacuum_interval_seconds, self._vacuum),
        ]
        tick = min(every for every, _ in duties)
        waited = [every for every, _ in duties]  # every duty runs on the first pass
        while True:
            for index, (every, duty) in enumerate(duties):
                if waited[index] < every:
                    continue
                waited[index] = 0.0
                try:
                    await duty(term)
                except StoreError as exc:
                    log.warning(
                        "housekeeping failed; will retry", duty=duty.__name__, error=str(exc)
                    )
            await asyncio.sleep(tick)
            waited = [w + tick for w in waited]
