"""The planner: turns due schedule slots into runs, exactly once per (job, slot).

Safe even if every node runs it at once: each job's cursor advances by compare-and-set
(only the planner that read the current cursor moves it), the runs are inserted in the
same transaction, and each slot's run carries an idempotency key derived from
(job, slot) as a second guard. Under a leader, every write also names the leader's term,
so a deposed leader's tick changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from rota.domain.jobs import Job, JobAdvance, slot_run
from rota.domain.misfire import (
    OverlapDecision,
    OverlapPolicy,
    jittered,
    overlap_decision,
    plan_due_slots,
)
from rota.domain.runs import NewRun
from rota.store.port import Store

log = structlog.get_logger("rota.planner")
DUE_BATCH = 500
MAX_BATCHES = 100  # bounds one tick: 50,000 due jobs


@dataclass(frozen=True)
class TickReport:
    jobs: int
    runs_created: int
    slots_skipped: int
    conflicts: int  # jobs another planner advanced first


class Planner:
    def __init__(self, store: Store, horizon: timedelta) -> None:
        self.store = store
        # Runs are created this far ahead of their slot so they start on time; jobs
        # whose overlap policy looks at the previous run are planned at the slot instead,
        # since whether the previous run is still going is only known then.
        self.horizon = horizon

    async def tick(self, now: datetime, leader_term: int | None = None) -> TickReport:
        """Plan every job due by ``now + horizon``, a batch at a time."""
        jobs = created = skipped = conflicts = 0
        for _ in range(MAX_BATCHES):
            due = await self.store.due_jobs(now + self.horizon, DUE_BATCH)
            decisions = [await self._decide(job, now) for job in due]
            advances = [advance for advance, _ in decisions]
            advanced = await self.store.advance_jobs(advances, now, leader_term)
            jobs += len(due)
            conflicts += len(due) - len(advanced)
            for advance, job_skipped in decisions:
                if advance.job_id in advanced:
                    created += len(advance.runs)
                    skipped += job_skipped
            if len(due) < DUE_BATCH or not advanced:
                break
        return TickReport(jobs, created, skipped, conflicts)

    async def _decide(self, job: Job, now: datetime) -> tuple[JobAdvance, int]:
        """Which slots of this job get runs, as a value; nothing is written here."""
        trigger = job.trigger
        spec = job.spec
        if trigger is None:  # a manual job has no slots
            return JobAdvance(job.id, job.cursor, job.cursor, None, ()), 0
        horizon = self.horizon if spec.overlap is OverlapPolicy.ALLOW else timedelta(0)
        plan = plan_due_slots(
            trigger,
            job.cursor,
            now,
            horizon,
            spec.misfire,
            spec.catch_up_window,
            spec.run_all_cap,
        )
        runs: list[NewRun] = []
        skipped = plan.skipped
        if plan.slots and spec.overlap is not OverlapPolicy.ALLOW:
            active, waiting = await self.store.job_run_counts(job.id)
        else:
            active = waiting = 0
        for slot in plan.slots:
            if overlap_decision(spec.overlap, active, waiting) is OverlapDecision.SKIP:
                skipped += 1
                continue
            run_at = jittered(slot, spec.jitter_seconds, f"{spec.namespace}/{spec.name}")
            runs.append(slot_run(job, slot, run_at))
            waiting += 1
        if skipped:
            log.info(
                "slots skipped",
                job=spec.name,
                skipped=skipped,
                misfire=spec.misfire.value,
                overlap=spec.overlap.value,
            )
        advance = JobAdvance(
            job.id, job.cursor, plan.next_cursor, trigger.next_after(plan.next_cursor), tuple(runs)
        )
        return advance, skipped
