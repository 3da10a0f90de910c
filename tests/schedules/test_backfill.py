"""Backfill through the store (both dialects): one run per slot, idempotent per slot,
sharing the planner's (job, slot) key; max_in_flight as a concurrency cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rota.clock import FakeClock
from rota.domain.backfill import BackfillRequest, backfill_key
from rota.domain.jobs import JobSpec, TriggerKind
from rota.domain.runs import Run, RunFilter
from rota.engine.planner import Planner
from rota.errors import InvalidArgument, JobNotFound
from rota.services import backfill, schedules
from rota.store.port import Store
from tests.contract.support import claim

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
# The week in which Berlin's clocks went back (2026-10-25, a day of 25 hours).
AUTUMN_WEEK = BackfillRequest(
    datetime(2026, 10, 19, tzinfo=BERLIN), datetime(2026, 10, 26, tzinfo=BERLIN)
)


async def hourly_job(store: Store, clock: FakeClock, name: str = "hourly") -> None:
    spec = JobSpec(name=name, handler="report", kind=TriggerKind.CRON, cron="0 * * * *",
                   timezone="Europe/Berlin")  # fmt: skip
    await schedules.save_job(store, clock, spec)


async def all_runs(store: Store) -> list[Run]:
    runs: list[Run] = []
    before: int | None = None
    while page := await store.list_runs(RunFilter(before_id=before, limit=200)):
        runs += page
        before = page[-1].id
    return runs


async def test_a_dst_week_backfilled_twice_makes_169_runs_once(store: Store) -> None:
    clock = FakeClock(NOW)
    await hourly_job(store, clock)
    first = await backfill.backfill(store, clock, "default", "hourly", AUTUMN_WEEK)
    assert (first.total, first.slots, first.created, first.existing) == (169, 169, 169, 0)
    again = await backfill.backfill(store, clock, "default", "hourly", AUTUMN_WEEK)
    assert (again.created, again.existing) == (0, 169)
    runs = await all_runs(store)
    assert len(runs) == 169
    assert len({run.slot_at for run in runs}) == 169
    assert all(run.concurrency_key is None for run in runs)


async def test_chunks_walk_the_range_and_dry_runs_write_nothing(store: Store) -> None:
    clock = FakeClock(NOW)
    await hourly_job(store, clock)
    counted = await backfill.backfill(
        store, clock, "default", "hourly", _with(AUTUMN_WEEK, dry_run=True)
    )
    assert (counted.total, counted.created) == (169, 0)
    assert await all_runs(store) == []
    start, made = AUTUMN_WEEK.start, 0
    while True:
        chunk = await backfill.backfill(
            store, clock, "default", "hourly", _with(AUTUMN_WEEK, start=start, limit=50)
        )
        made += chunk.created
        if chunk.next_from is None:
            break
        start = chunk.next_from
    assert made == 169
    assert len(await all_runs(store)) == 169


async def test_a_slot_the_planner_made_is_not_made_again(store: Store) -> None:
    clock = FakeClock(datetime(2026, 10, 19, 9, 30, tzinfo=UTC))
    await hourly_job(store, clock)
    clock.advance(hours=2)
    report = await Planner(store, timedelta(0)).tick(clock.now())
    assert report.runs_created == 1  # fire_now: the latest missed slot, 11:00 UTC
    done = await backfill.backfill(store, clock, "default", "hourly", AUTUMN_WEEK)
    assert (done.created, done.existing) == (168, 1)
    assert len(await all_runs(store)) == 169


async def test_max_in_flight_caps_the_backfills_runs(store: Store) -> None:
    clock = FakeClock(NOW)
    await hourly_job(store, clock)
    capped = _with(AUTUMN_WEEK, max_in_flight=3, limit=5)
    await backfill.backfill(store, clock, "default", "hourly", capped)
    runs = await all_runs(store)
    job = await schedules.get_job(store, "default", "hourly")
    assert {(r.concurrency_key, r.concurrency_limit) for r in runs} == {(backfill_key(job.id), 3)}
    claimed = await claim(store, NOW + timedelta(seconds=1), limit=5)
    assert len(claimed) == 3  # the other two wait for one of these to finish


async def test_unknown_and_manual_jobs_are_refused(store: Store) -> None:
    clock = FakeClock(NOW)
    with pytest.raises(JobNotFound):
        await backfill.backfill(store, clock, "default", "nope", AUTUMN_WEEK)
    await schedules.save_job(store, clock, JobSpec(name="manual", handler="report"))
    with pytest.raises(InvalidArgument, match="manual job has no slots"):
        await backfill.backfill(store, clock, "default", "manual", AUTUMN_WEEK)
    assert await all_runs(store) == []


def _with(request: BackfillRequest, **changes: object) -> BackfillRequest:
    fields = {
        "start": request.start,
        "end": request.end,
        "max_in_flight": request.max_in_flight,
        "confirm": request.confirm,
        "limit": request.limit,
        "dry_run": request.dry_run,
    }
    return BackfillRequest(**{**fields, **changes})  # type: ignore[arg-type]
