"""Backfill: one run per slot of a job's schedule in a past (or any) range.

Pure. The slots are the job's own trigger's (rota.domain.triggers), so a cron read in
Europe/Berlin gives 23 slots on the day clocks go forward and 25 on the day they go
back, exactly as the planner would have (ADR 0003). Each slot's run carries the
planner's idempotency key for (job, slot) (:func:`rota.domain.jobs.slot_run`): a slot
already planned, or backfilled before, is never made twice.

``max_in_flight`` caps how many of a backfill's runs are claimed or running at once,
cluster-wide, through a concurrency key (ADR 0008): the cap holds without anything
having to stay up to watch it, and live runs of the job are not held back by it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from rota.domain.jobs import Job, slot_run
from rota.domain.runs import NewRun, check_positive_int
from rota.domain.triggers import Trigger, fire_times
from rota.domain.values import check_instant
from rota.errors import InvalidArgument

# A range with more slots than this is refused (split it): computing slots costs ~30 us
# each, and one request must stay short.
MAX_BACKFILL_SLOTS = 10_000
# More slots than this need an explicit confirmation (--yes, or "confirm": true).
CONFIRM_ABOVE = 1_000
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class BackfillRequest:
    """Slots at or after ``start`` and before ``end``. ``limit``: handle only the first
    this many (a client going chunk by chunk, e.g. for a progress bar); ``dry_run``:
    count, write nothing. Validated on construction."""

    start: datetime
    end: datetime
    max_in_flight: int | None = None
    confirm: bool = False
    limit: int | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", check_instant("from", self.start))
        object.__setattr__(self, "end", check_instant("to", self.end))
        if self.start >= self.end:
            raise InvalidArgument(
                "range",
                f"from {self.start.isoformat()} to {self.end.isoformat()}",
                "from before to",
            )
        if self.max_in_flight is not None:
            check_positive_int("max_in_flight", self.max_in_flight, MAX_BACKFILL_SLOTS)
        if self.limit is not None:
            check_positive_int("limit", self.limit, MAX_BACKFILL_SLOTS)


@dataclass(frozen=True)
class BackfillPlan:
    """``slots``: the ones to handle now (all, or the first ``limit``); ``total``: every
    slot in the range; ``next_from``: where the rest begins (None: nothing left)."""

    slots: tuple[datetime, ...]
    total: int
    next_from: datetime | None


def plan_backfill(trigger: Trigger, request: BackfillRequest) -> BackfillPlan:
    """The slots of ``trigger`` in [start, end), or a refusal naming the count."""
    found = fire_times(trigger, request.start - _TICK, request.end - _TICK, MAX_BACKFILL_SLOTS + 1)
    if len(found) > MAX_BACKFILL_SLOTS:
        raise InvalidArgument(
            "range",
            f"from {request.start.isoformat()} to {request.end.isoformat()}",
            f"at most {MAX_BACKFILL_SLOTS} slots (this range has more): split it",
        )
    if len(found) > CONFIRM_ABOVE and not request.confirm:
        raise InvalidArgument(
            "slot count",
            len(found),
            f"at most {CONFIRM_ABOVE} without confirmation (--yes, or confirm: true)",
        )
    chosen = found if request.limit is None else found[: request.limit]
    next_from = found[len(chosen)] if len(chosen) < len(found) else None
    return BackfillPlan(tuple(chosen), len(found), next_from)


def backfill_key(job_id: int) -> str:
    """The concurrency key a backfill's runs share when ``max_in_flight`` is set."""
    return f"rota:backfill:{job_id}"


def backfill_run(job: Job, slot: datetime, max_in_flight: int | None) -> NewRun:
    """The run for one backfilled slot: the planner's run for it (same idempotency
    key), due now rather than at its past slot, so it queues behind live work of
    the same priority instead of ahead of all of it."""
    run = replace(slot_run(job, slot, slot), run_at=None)
    if max_in_flight is None:
        return run
    return replace(run, concurrency_key=backfill_key(job.id), concurrency_limit=max_in_flight)
