"""Singleton-ish duties: return runs whose lease expired, prune old finished runs.

Both are safe to run on every node at once (the reaper locks rows with SKIP LOCKED or
BEGIN IMMEDIATE; pruning deletes by id). Leader election narrows them to one node.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import structlog

from rota.clock import Clock
from rota.config import Settings
from rota.domain.runs import ReapedRun
from rota.errors import StoreError
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

    async def reap_once(self) -> list[ReapedRun]:
        reaped = await self.store.reap_expired(
            self.clock.db_now(), self.settings.poison_after, REAP_BATCH
        )
        for run in reaped:
            log.warning(
                "lease expired; run taken back", run_id=run.run_id, fence=run.fence, state=run.state
            )
        return reaped

    async def prune_once(self) -> int:
        cutoff = self.clock.now() - timedelta(seconds=self.settings.retention_seconds)
        return await self.store.prune_finished(cutoff, PRUNE_BATCH)

    async def run(self) -> None:
        since_prune = PRUNE_EVERY_SECONDS
        while True:
            try:
                await self.reap_once()
                if since_prune >= PRUNE_EVERY_SECONDS:
                    since_prune = 0.0
                    pruned = await self.prune_once()
                    if pruned:
                        log.info("pruned finished runs", count=pruned)
            except StoreError as exc:
                log.warning("housekeeping failed; will retry", error=str(exc))
            await asyncio.sleep(self.settings.reap_interval_seconds)
            since_prune += self.settings.reap_interval_seconds
