"""The planner: turns due schedule slots into runs, exactly once per (job, slot).

Safe even if every node runs it at once: each job's cursor advances by compare-and-set
(only the planner that read the current cursor moves it), the runs are inserted in the
same transaction, and each slot's run carries an idempotency key derived from
(job, slot) as a second guard. Under a leader, every write also names the leader's term,
so a deposed leader's tick changes nothing.

One job never stops the others. A job whose planning fails (its definition cannot be
read, computing its slots raises, or the store refuses its rows) is set aside: its error
is recorded on the job (shown by the API and the CLI), it is retried after a growing
delay (:func:`rota.domain.jobs.planning_retry_delay`) or at once when updated or
resumed, and the rest of the tick goes on. A batch the store refuses is split in halves
until the job at fault is alone. Only an unreachable store (StoreUnavailable) ends the
tick, since then no job can be planned.

The planner keeps up with its load (issue 25, ADR 0029). A slot's runs should be
committed well before the slot; when planning a slot takes the planner so long that
its run would be committed with less than half the horizon to spare (many jobs share a
slot, or a slow database), it looks further ahead by the difference, its *lead*, so the
next pass starts that much earlier. When passes are quick again, the lead shrinks back.
Only slots still ahead when the pass began count: a slot planned after it passed
(catch-up after an outage, a horizon of 0) says nothing about the planner's pace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from rota.domain.jobs import (
    Job,
    JobAdvance,
    UnreadableJob,
    planning_error_text,
    planning_retry_delay,
    slot_run,
)
from rota.domain.misfire import jittered, plan_due_slots
from rota.domain.runs import NewRun
from rota.errors import StoreError, StoreUnavailable
from rota.observe import hooks
from rota.store.port import Store

log = structlog.get_logger("rota.engine.planner")
DUE_BATCH = 500
MAX_BATCHES = 100  # bounds one tick: 50,000 due jobs
# A slot's runs should be committed with at least this share of the horizon to spare.
TARGET_MARGIN = 0.5
# The lead never exceeds this many horizons: a job paused inside horizon + lead still
# runs its planned slot (DESIGN.md, "a run already planned stays").
MAX_LEAD_HORIZONS = 10


@dataclass(frozen=True)
class TickReport:
    jobs: int
    runs_created: int
    slots_skipped: int
    conflicts: int  # jobs another planner advanced first
    set_aside: int = 0  # jobs whose planning failed this tick (see the module docstring)


Decision = tuple[JobAdvance, int]  # the advance, and how many slots it skipped


@dataclass
class Pace:
    """How much further than the horizon the planner looks to keep up with its load (the
    module docstring). Judged per pass: the ticks from one that finds due jobs to one
    that leaves none behind (a tick plans at most MAX_BATCHES batches).

    What is measured is the planner's own delay: from when a slot came into its view
    (``horizon + lead`` ahead, or the pass's start if it was in view already: a job
    created or resumed close to its slot) to when its run was committed. To leave half
    the horizon to spare, the lead must be that delay less half the horizon."""

    horizon: timedelta
    lead: timedelta = timedelta(0)
    _since: datetime | None = None  # the first tick of the pass under way
    _lead_then: timedelta = timedelta(0)  # the lead when it began
    _worst: timedelta | None = None  # the longest delay of the pass so far, if any
    _last_end: datetime | None = None  # when the pass's latest tick ended

    def begin(self, now: datetime) -> None:
        # A pass's ticks follow each other; a gap longer than the horizon means the
        # ticks stopped (leadership lost, an outage) and the old pass says nothing now.
        stale = self._last_end is not None and now - self._last_end > self.horizon
        if self._since is None or stale:
            self._since, self._lead_then, self._worst = now, self.lead, None

    def abandon(self) -> None:
        """The tick failed: its pass is not judged (the lead stays as it was)."""
        self._since = None

    def committed(self, runs: list[NewRun], at: datetime) -> None:
        """Runs were committed ``at``; only slots ahead of the pass's start count."""
        since = self._since
        if since is None:
            return
        view = self.horizon + self._lead_then
        for run in runs:
            if run.slot_at is not None and run.slot_at > since:
                delay = at - max(since, run.slot_at - view)
                if self._worst is None or delay > self._worst:
                    self._worst = delay

    def tick_ended(self, at: datetime, pass_ended: bool) -> None:
        """The lead the pass needs so far: taken at once when it is more than the lead;
        when the whole pass needed less, the lead comes down by half the difference."""
        self._last_end = at
        if pass_ended:
            self._since = None
        if self._worst is None:  # nothing ahead was planned: no news of the pace
            return
        needed = min(
            max(self._worst - self.horizon * TARGET_MARGIN, timedelta(0)),
            self.horizon * MAX_LEAD_HORIZONS,
        )
        if needed > self.lead:
            self.lead = needed
            log.info("planner looks further ahead to keep up", lead_seconds=needed.total_seconds())
        elif pass_ended:
            self.lead -= (self.lead - needed) / 2


class Planner:
    def __init__(
        self,
        store: Store,
        horizon: timedelta,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        # Runs are created this far ahead of their slot so they start on time, for
        # every overlap policy (the claim decides the overlap when a run falls due).
        self.horizon = horizon
        self.pace = Pace(horizon)
        self._monotonic = monotonic  # how long a tick has taken so far

    @property
    def lead(self) -> timedelta:
        return self.pace.lead

    async def tick(self, now: datetime, leader_term: int | None = None) -> TickReport:
        """Plan every job due by ``now + horizon + lead``, a batch at a time."""
        self.pace.begin(now)
        try:
            return await self._plan(now, leader_term)
        except BaseException:
            self.pace.abandon()
            raise

    async def _plan(self, now: datetime, leader_term: int | None) -> TickReport:
        started = self._monotonic()
        ahead = self.horizon + self.pace.lead
        planned: list[NewRun] = []
        jobs = created = skipped = conflicts = set_aside = 0
        for _ in range(MAX_BATCHES):
            due = await self.store.due_jobs(now + ahead, DUE_BATCH)
            decisions: list[Decision] = []
            failed: list[tuple[int, int, str]] = []  # (job id, failures so far, error)
            for job in due:
                if isinstance(job, UnreadableJob):
                    failed.append((job.id, job.planning_failures, job.error))
                    continue
                try:
                    decisions.append(await self._decide(job, now, ahead))
                except StoreUnavailable:
                    raise
                except Exception as exc:  # noqa: BLE001 - whatever it is, it is this job's
                    failed.append((job.id, job.planning_failures, planning_error_text(exc)))
            advanced, refused = await self._advance(decisions, now, leader_term)
            failures = {job.id: job.planning_failures for job in due}
            failed += [(job_id, failures[job_id], error) for job_id, error in refused]
            for job_id, previous, error in failed:
                await self._set_aside(job_id, previous, error, now)
            jobs += len(due)
            set_aside += len(failed)
            conflicts += len(decisions) - len(advanced) - len(refused)
            batch = [
                run
                for advance, _ in decisions
                if advance.job_id in advanced
                for run in advance.runs
            ]
            committed = now + timedelta(seconds=self._monotonic() - started)
            self.pace.committed(batch, committed)
            planned += batch
            created += len(batch)
            skipped += sum(n for advance, n in decisions if advance.job_id in advanced)
            if len(due) < DUE_BATCH or not (advanced or failed):
                self.pace.tick_ended(committed, pass_ended=True)
                break
        else:  # the tick's cap was reached with due jobs left: the pass goes on
            self.pace.tick_ended(committed, pass_ended=False)
        hooks.slots_planned(planned, now)
        return TickReport(jobs, created, skipped, conflicts, set_aside)

    async def _advance(
        self, decisions: list[Decision], now: datetime, leader_term: int | None
    ) -> tuple[set[int], list[tuple[int, str]]]:
        """Apply the decisions; a batch the store refuses is split until the job at
        fault stands alone. Returns the ids advanced, and each refused job's error."""
        if not decisions:
            return set(), []
        try:
            advances = [advance for advance, _ in decisions]
            return await self.store.advance_jobs(advances, now, leader_term), []
        except StoreUnavailable:
            raise
        except StoreError as exc:
            if len(decisions) == 1:
                return set(), [(decisions[0][0].job_id, planning_error_text(exc))]
        middle = len(decisions) // 2
        advanced, refused = await self._advance(decisions[:middle], now, leader_term)
        more_advanced, more_refused = await self._advance(decisions[middle:], now, leader_term)
        return advanced | more_advanced, refused + more_refused

    async def _set_aside(
        self, job_id: int, previous_failures: int, error: str, now: datetime
    ) -> None:
        retry_at = now + planning_retry_delay(previous_failures + 1)
        log.warning("job set aside: planning failed", job_id=job_id, error=error, retry_at=retry_at)
        try:
            await self.store.set_job_aside(job_id, error, retry_at, now)
        except StoreError as record_exc:  # the job is tried again next tick
            log.warning(
                "could not record a planning error",
                job_id=job_id,
                error=planning_error_text(record_exc),
            )

    async def _decide(self, job: Job, now: datetime, ahead: timedelta) -> tuple[JobAdvance, int]:
        """Which slots of this job get runs, as a value; nothing is written here."""
        trigger = job.trigger
        spec = job.spec
        if trigger is None:  # a manual job has no slots
            return JobAdvance(job.id, job.cursor, job.cursor, None, ()), 0
        plan = plan_due_slots(
            trigger,
            job.cursor,
            now,
            ahead,
            spec.misfire,
            spec.catch_up_window,
            spec.run_all_cap,
        )
        # Every policy is planned ahead: the overlap is decided when a run falls due,
        # by the claim, on the job's overlap key (rota.domain.overlap, ADR 0029).
        jitter_key = f"{spec.namespace}/{spec.name}"
        runs = tuple(
            slot_run(job, slot, jittered(slot, spec.jitter_seconds, jitter_key))
            for slot in plan.slots
        )
        skipped = plan.skipped
        if skipped:
            log.info(
                "slots skipped",
                job=spec.name,
                skipped=skipped,
                misfire=spec.misfire.value,
                overlap=spec.overlap.value,
            )
        advance = JobAdvance(
            job.id, job.cursor, plan.next_cursor, trigger.next_after(plan.next_cursor), runs
        )
        return advance, skipped
