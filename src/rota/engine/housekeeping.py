"""The leader's duties: plan schedule slots into runs, declare silent workers dead,
return runs whose lease expired, cancel runs past their start-by deadline, report runs
no worker can take, prune old finished runs, dead workers and the API's ended rate
windows, count finished runs per minute (for the dashboard).

Every write names the leader's term, so a leader that was deposed while it worked
changes nothing. Each duty is also safe to run on several nodes at once (the planner by
compare-and-set, the reaper by SKIP LOCKED / BEGIN IMMEDIATE, pruning by id), so a
brief overlap of two leaders does no harm.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta

import structlog

from rota.clock import TICK_PHASE_SECONDS, Clock
from rota.config import Settings
from rota.domain.charts import CHART_BATCHES_PER_TURN
from rota.domain.runs import ReapedRun
from rota.engine.leader import LeaderElector
from rota.engine.planner import Planner, TickReport
from rota.errors import RotaError
from rota.observe import cluster, hooks
from rota.store.port import Store
from rota.supervise import (
    CANCEL_WAIT_SECONDS,
    GaveUp,
    Reachability,
    Restarts,
    Sleep,
    cancel_all_and_wait,
    every,
    supervise,
)

log = structlog.get_logger("rota.engine.housekeeping")
REAP_BATCH = 1000
PRUNE_BATCH = 5000
PRUNE_EVERY_SECONDS = 60.0
COUNT_FINISHED_EVERY_SECONDS = 60.0  # a minute is counted within a minute of settling


def duty_phase(name: str, seconds: float) -> float:
    """Where on its period a duty's turns fall (:func:`rota.clock.next_tick`'s phase).
    The planner ticks half a second past each whole second, just after a cron slot (a
    slot is on a whole minute). Every other duty ticks about half its period later, off
    the slots: the per-minute ones (pruning, the finished counts and chart rollups) at
    :30.5, the vacuum at :07.5, :22.5, :37.5 and :52.5, the gauges at :05.5, :15.5, ...,
    so none lands in the first seconds after a minute's slot, while its runs drain
    (issue 25: at :00.5 they took ~0.4 s of the server's time out of a 100,000-run
    slot's drain). Whole seconds are kept for the slots themselves (cron has seconds):
    every duty stays half a second off them."""
    if name == "planner":
        return TICK_PHASE_SECONDS
    return TICK_PHASE_SECONDS + math.floor(seconds / 2)


# Consecutive failures of one duty, over at least a leader lease, after which the
# leader resigns (see DutiesFailing).
GIVE_UP_AFTER = 5


class DutiesFailing(RotaError):
    """A leader duty failed again and again: this node cannot do the leader's work."""

    def __init__(self, term: int | None) -> None:
        self.term = term
        super().__init__(f"leader duties of term {term} keep failing")


class Housekeeper:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock,
        restarts: Restarts | None = None,
        sleep: Sleep = asyncio.sleep,
        reachability: Reachability | None = None,
    ) -> None:
        self.store = store
        self.reachability = reachability or Reachability()
        self.settings = settings
        self.clock = clock
        self.restarts = restarts or Restarts()
        self.sleep = sleep
        self.planner = Planner(
            store, timedelta(seconds=settings.planner_horizon_seconds), clock.monotonic
        )

    async def plan_once(self, term: int | None = None) -> TickReport:
        now = await self.store.now(self.clock.db_now())
        return await self.planner.tick(now, term)

    async def reap_once(self, term: int | None = None) -> list[ReapedRun]:
        reaped = await self.store.reap_expired(
            self.clock.db_now(), self.settings.poison_after, REAP_BATCH, term
        )
        hooks.runs_reclaimed(len(reaped))
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
        # Webhook deliveries are kept as long as runs (the one SqlStore has both ports).
        await self.store.webhooks.prune_deliveries(cutoff, PRUNE_BATCH, term)
        # A workflow's steps go with their workflow run, never one by one.
        workflows = await self.store.prune_workflow_runs(cutoff, PRUNE_BATCH, term)
        if workflows:
            log.info("pruned finished workflow runs", count=workflows)
        event_cutoff = now - timedelta(seconds=self.settings.event_retention_seconds)
        await self.store.events.prune_events(event_cutoff, PRUNE_BATCH, term)
        # The API's rate windows that have ended count nothing any more (ADR 0036).
        await self.store.api_limits.prune_api_windows(now, PRUNE_BATCH)
        retired = await self.store.retire_history(cutoff, term)
        if retired:
            log.info("retired days of finished runs", count=retired)
        return await self.store.prune_finished(cutoff, PRUNE_BATCH, term)

    async def reap_cycle(self, term: int | None = None) -> None:
        """Declare silent workers dead, take back expired leases, expire deadlines.

        After an outage of the database (seen by this node's election, which asks the
        database every third of a leader lease, leading or not) leases are not taken
        back and no worker is declared dead until the others had time to reconnect and
        renew: every lease and heartbeat lapsed during the outage, and reaping them at
        once would spend an attempt of every healthy run (and count towards poison).
        Renewal does not check expiry, so a worker that renews within the grace keeps
        its run; one that really died meanwhile is taken back when the grace ends."""
        settling = self.reachability.settling(
            self.clock.monotonic(),
            grace=self.outage_grace_seconds,
            long_enough=self.settings.lease_seconds / 3,  # a live worker missed a renewal
        )
        if not settling:
            await self.bury_dead_workers(term)  # first, so their runs are reaped next
            await self.reap_once(term)
        await self.expire_deadlines(term)

    @property
    def outage_grace_seconds(self) -> float:
        """Time for every worker to renew its leases and beat once after an outage."""
        return max(self.settings.lease_seconds, 2 * self.settings.worker_heartbeat_seconds)

    async def _prune_cycle(self, term: int | None) -> None:
        await self.report_unclaimable()
        pruned = await self.prune_once(term)
        if pruned:
            log.info("pruned finished runs", count=pruned)

    async def count_finished(self, term: int | None = None) -> None:
        """Count finished runs per minute, handler, final state and pickup delay, for
        the charts and the overview's finished counts, in bounded batches (a first count
        of 8 days is one batch an hour; overlapping leaders write the same numbers)."""
        now = await self.store.now(self.clock.db_now())
        for _ in range(CHART_BATCHES_PER_TURN):
            if (await self.store.count_chart_batch(now)).caught_up:
                return

    async def _vacuum(self, term: int | None) -> None:
        await self.store.vacuum()

    async def _publish_gauges(self, term: int | None) -> None:
        await hooks.publish_cluster_gauges(self.store, self.clock)  # never raises

    async def run(
        self, term: int | None = None, still_leading: Callable[[], bool] = lambda: True
    ) -> None:
        """Run every duty, each in its own supervised loop at its own pace, while
        ``still_leading()`` holds (each loop checks it on every turn, so the duties stop
        by themselves even if a cancellation was swallowed). A failing duty is logged,
        counted and retried without stopping the others. Returns when leadership ends;
        raises :class:`DutiesFailing` when a duty failed ``GIVE_UP_AFTER`` times in a
        row over at least a leader lease: the node cannot do the leader's work, and
        should let another node lead."""
        loops = [
            asyncio.create_task(
                every(
                    f"leader-{name}",
                    seconds,
                    functools.partial(duty, term),
                    self.restarts,
                    keep_going=still_leading,
                    give_up_after=GIVE_UP_AFTER,
                    give_up_seconds=self.settings.leader_lease_seconds,
                    first_now=True,
                    sleep=self.sleep,
                    # On absolute instants (the next multiple of the period, at its
                    # phase): the planner's ticks do not drift by what they take, and
                    # the other duties stay off the cron slots (duty_phase).
                    wall=self._wall,
                    phase=duty_phase(name, seconds),
                ),
                name=f"rota-leader-{name}",
            )
            for name, seconds, duty in self._duties()
        ]
        try:
            # The first loop to end decides: all end when leadership ends, and one
            # that gave up ends the others.
            done, _ = await asyncio.wait(loops, return_when=asyncio.FIRST_COMPLETED)
            for loop in done:
                if not loop.cancelled() and isinstance(loop.exception(), GaveUp):
                    raise DutiesFailing(term) from loop.exception()
        finally:
            await cancel_all_and_wait(loops, CANCEL_WAIT_SECONDS)

    def _wall(self) -> float:
        return self.clock.now().timestamp()

    def _duties(
        self,
    ) -> list[tuple[str, float, Callable[[int | None], Awaitable[object]]]]:
        return [
            ("planner", self.settings.planner_interval_seconds, self.plan_once),
            ("reaper", self.settings.reap_interval_seconds, self.reap_cycle),
            ("pruner", PRUNE_EVERY_SECONDS, self._prune_cycle),
            ("finished-counts", COUNT_FINISHED_EVERY_SECONDS, self.count_finished),
            ("vacuum", self.settings.vacuum_interval_seconds, self._vacuum),
            ("gauges", cluster.REFRESH_SECONDS, self._publish_gauges),
        ]


async def stand_for_leader(
    store: Store, settings: Settings, clock: Clock, node_id: str, restarts: Restarts
) -> None:
    """Stand for leader for as long as the node lives and run the duties while leading:
    the one assembly of elector and housekeeper that every kind of node uses (a worker,
    ``rota server --no-worker``). The election itself is supervised, so an error in it
    restarts it instead of leaving the node out of the race."""
    reachability = Reachability()  # seen by the election, heeded by the reaper
    keeper = Housekeeper(store, settings, clock, restarts, reachability=reachability)
    elector = LeaderElector(
        store, node_id, settings.leader_lease_seconds, clock, reachability=reachability
    )
    await supervise("election", lambda: elector.run(keeper.run), restarts)
