"""Backfill: the use case the API and the CLI share (rota.domain.backfill, ADR 0024)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.clock import Clock
from rota.domain.backfill import BackfillRequest, backfill_run, plan_backfill
from rota.errors import InvalidArgument
from rota.services import schedules
from rota.store.port import Store


@dataclass(frozen=True)
class BackfillResult:
    """``slots`` handled by this call, of ``total`` in the range; ``created`` new runs,
    ``existing`` slots that had one already (planned, or backfilled before);
    ``next_from``: pass it as the next call's start to go on (None: done)."""

    total: int
    slots: int
    created: int
    existing: int
    first_slot: datetime | None
    last_slot: datetime | None
    next_from: datetime | None


async def backfill(
    store: Store, clock: Clock, namespace: str, name: str, request: BackfillRequest
) -> BackfillResult:
    """One run per slot of the job's schedule in the request's range (a dry run only
    counts). Running it again creates nothing new."""
    job = await schedules.get_job(store, namespace, name)
    trigger = job.trigger
    if trigger is None:
        raise InvalidArgument("job", name, "a job with a schedule (a manual job has no slots)")
    plan = plan_backfill(trigger, request)
    first = plan.slots[0] if plan.slots else None
    last = plan.slots[-1] if plan.slots else None
    if request.dry_run or not plan.slots:
        return BackfillResult(plan.total, len(plan.slots), 0, 0, first, last, plan.next_from)
    runs = [backfill_run(job, slot, request.max_in_flight) for slot in plan.slots]
    enqueued = await store.enqueue(runs, clock.db_now())
    created = sum(1 for e in enqueued if e.created)
    return BackfillResult(
        plan.total, len(runs), created, len(runs) - created, first, last, plan.next_from
    )
