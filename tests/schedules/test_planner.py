"""The planner on both stores: one run per slot, misfire and overlap policies, pause."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

import rota
from rota.domain.runs import NewRun, RunFilter
from rota.domain.states import RunState
from rota.engine.planner import Pace, Planner
from rota.services import schedules
from rota.store.port import ClaimRequest, Store
from tests.contract.support import peers
from tests.schedules.conftest import T0, make_job, planner, slot_runs


async def test_each_slot_becomes_one_run(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "every-minute", cron="* * * * *")
    assert job.next_fire_at == T0 + timedelta(minutes=1)
    plan = planner(store)
    for minute in range(1, 6):
        clock.set(T0 + timedelta(minutes=minute))
        await plan.tick(clock.now())
        await plan.tick(clock.now())  # a second tick at the same instant adds nothing
    assert await slot_runs(store, job.id) == [T0 + timedelta(minutes=m) for m in range(1, 6)]


async def test_runs_are_created_a_horizon_ahead(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "soon", cron="*/10 * * * * *")  # every 10 s
    await planner(store, horizon=25).tick(T0)
    assert await slot_runs(store, job.id) == [T0 + timedelta(seconds=s) for s in (10, 20)]
    runs = await store.list_runs(RunFilter(limit=10))
    assert {r.run_at for r in runs} == {T0 + timedelta(seconds=s) for s in (10, 20)}


async def test_three_planners_at_once_make_each_slot_one_run(store: Store, clock, registry):
    jobs = [
        await make_job(store, clock, registry, "seconds", cron="* * * * * *"),
        await make_job(store, clock, registry, "every-7s", interval=7),
        await make_job(store, clock, registry, "quarter", cron="*/15 * * * * *"),
    ]
    async with peers(store, 3) as stores:
        planners = [planner(s, horizon=3) for s in stores]
        for second in range(0, 120, 2):
            now = T0 + timedelta(seconds=second)
            await asyncio.gather(*(p.tick(now) for p in planners))
    end = T0 + timedelta(seconds=118 + 3)
    expected = {
        jobs[0].id: [T0 + timedelta(seconds=s) for s in range(1, 122)],
        jobs[1].id: [T0 + timedelta(seconds=s) for s in range(7, 122, 7)],
        jobs[2].id: [T0 + timedelta(seconds=s) for s in range(15, 122, 15)],
    }
    for job in jobs:
        made = await slot_runs(store, job.id)
        assert made == [s for s in expected[job.id] if s <= end], job.spec.name


@pytest.mark.parametrize(
    ("misfire", "expected_catch_up"),
    [("fire_now", 1), ("skip", 0), ("run_all", 59)],
)
async def test_misfire_after_a_one_hour_outage(
    store: Store, clock, registry, misfire, expected_catch_up
):
    job = await make_job(
        store,
        clock,
        registry,
        "minutely",
        cron="* * * * *",
        misfire=misfire,
        catch_up_window=3600,
    )
    plan = planner(store)
    await plan.tick(T0)
    outage_end = T0 + timedelta(hours=1)  # nothing ran for an hour
    report = await plan.tick(outage_end)
    made = await slot_runs(store, job.id)
    catch_up = [s for s in made if s < outage_end]
    assert len(catch_up) == expected_catch_up
    assert made.count(outage_end) == 1, "the slot at the end of the outage runs normally"
    if misfire == "fire_now":
        assert catch_up == [outage_end - timedelta(minutes=1)], "the latest missed slot"
    assert report.slots_skipped == 59 - expected_catch_up


async def test_slots_older_than_the_catch_up_window_are_dropped(store: Store, clock, registry):
    job = await make_job(
        store,
        clock,
        registry,
        "minutely",
        cron="* * * * *",
        misfire="run_all",
        catch_up_window=600,
    )
    await planner(store).tick(T0 + timedelta(hours=1))
    made = await slot_runs(store, job.id)
    assert made[0] > T0 + timedelta(minutes=50)
    assert len(made) == 10  # the 9 missed within 10 minutes, and the slot at now


async def _claim_all(store: Store) -> None:
    await store.claim(ClaimRequest("w", ("default",), 100, 60), T0 + timedelta(days=1))


@pytest.mark.parametrize(
    ("overlap", "started", "waiting", "skipped"),
    [("allow", 2, 0, 0), ("skip", 0, 0, 2), ("buffer_one", 0, 1, 1)],
)
async def test_overlap_is_decided_when_the_runs_fall_due(
    store: Store, clock, registry, overlap, started, waiting, skipped
):
    """Every policy is planned ahead (ADR 0029); the claim decides the overlap."""
    job = await make_job(store, clock, registry, "slow", cron="* * * * *", overlap=overlap)
    plan = planner(store, horizon=150.0)
    await plan.tick(T0 + timedelta(seconds=30))
    assert len(await slot_runs(store, job.id)) == 3  # minutes 1, 2 and 3: all ahead
    request = ClaimRequest("w", ("default",), 100, 3600)
    assert len(await store.claim(request, T0 + timedelta(minutes=1))) == 1  # still running...
    due = await store.claim(request, T0 + timedelta(minutes=3))  # ...when 2 and 3 fall due
    assert len(due) == started
    runs = [r for r in await store.list_runs(RunFilter(limit=100)) if r.job_id == job.id]
    assert sum(r.state is RunState.PENDING for r in runs) == waiting
    gone = [r for r in runs if r.state is RunState.SKIPPED]
    assert len(gone) == skipped
    assert all(r.error == "previous run still live" for r in gone)


async def test_pause_and_resume_skip_the_paused_slots(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "minutely", cron="* * * * *")
    plan = planner(store)
    await plan.tick(T0 + timedelta(minutes=1))
    await schedules.set_paused(store, clock, "default", "minutely", True)
    await plan.tick(T0 + timedelta(minutes=5))
    clock.set(T0 + timedelta(minutes=10))
    resumed = await schedules.set_paused(store, clock, "default", "minutely", False)
    assert resumed.next_fire_at == T0 + timedelta(minutes=11)
    await plan.tick(T0 + timedelta(minutes=11))
    made = await slot_runs(store, job.id)
    assert made == [T0 + timedelta(minutes=1), T0 + timedelta(minutes=11)]


async def test_changing_the_trigger_restarts_planning_from_now(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "nightly", cron="0 2 * * *")
    clock.advance(hours=1)
    changed = await schedules.update_job(store, clock, "default", "nightly", cron="30 * * * *")
    assert changed.id == job.id
    assert changed.cursor == clock.now()
    assert changed.next_fire_at == T0 + timedelta(hours=1, minutes=30)


async def test_a_one_off_job_fires_once(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "once", at=T0 + timedelta(minutes=3))
    plan = planner(store)
    for minute in range(10):
        await plan.tick(T0 + timedelta(minutes=minute))
    assert await slot_runs(store, job.id) == [T0 + timedelta(minutes=3)]
    assert (await store.get_job("default", "once")).next_fire_at is None


async def test_jitter_is_the_same_on_every_planner(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "jittery", cron="* * * * *", jitter=30)
    async with peers(store, 2) as (a, b):
        await asyncio.gather(
            planner(a).tick(T0 + timedelta(minutes=1)), planner(b).tick(T0 + timedelta(minutes=1))
        )
    runs = [r for r in await store.list_runs(RunFilter(limit=10)) if r.job_id == job.id]
    assert len(runs) == 1
    assert T0 + timedelta(minutes=1) <= runs[0].run_at < T0 + timedelta(minutes=1, seconds=30)
    assert runs[0].state is RunState.PENDING


async def test_a_manual_trigger_runs_now_with_its_own_payload(store: Store, clock, registry):
    await make_job(store, clock, registry, "adhoc")
    run_id = await schedules.trigger_job(store, clock, "default", "adhoc", {"x": 1}, "k1")
    again = await schedules.trigger_job(store, clock, "default", "adhoc", {"x": 1}, "k1")
    assert run_id == again
    run = await store.get_run(run_id)
    assert run.payload == {"x": 1}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cron": "0 0 * * 8"}, "day-of-week"),
        ({"cron": "0 0 30 2 *"}, "can fire"),
        ({"cron": "0 2 * * *", "timezone": "Mars/Olympus"}, "time zone"),
        ({"cron": "* * *"}, "5 fields"),
        ({"interval": 0}, "interval"),
        ({"cron": "* * * * *", "misfire": "sometimes"}, "misfire"),
        ({"cron": "* * * * *", "overlap": "never"}, "overlap"),
    ],
)
async def test_a_bad_schedule_is_refused_and_nothing_is_written(
    store: Store, clock, registry, options, message
):
    with pytest.raises(rota.InvalidArgument, match=message):
        await make_job(store, clock, registry, "bad", **options)
    assert await store.list_jobs() == []


@pytest.mark.parametrize("change", ["pause", "edit", "delete"])
async def test_a_run_planned_ahead_stays_when_its_job_changes_inside_the_horizon(
    store: Store, clock, registry, change
):
    """Planned ahead (DESIGN.md, "The planner"): a run already planned for a slot stays
    and is claimed at its slot, with the overlap key it was planned with, whatever
    happens to its job meanwhile; the change applies to slots not planned yet."""
    job = await make_job(store, clock, registry, "soon", cron="* * * * *", overlap="skip")
    clock.set(T0 + timedelta(seconds=50))
    await planner(store, horizon=15.0).tick(clock.now())  # minute 1, 10 s ahead
    if change == "pause":
        await schedules.set_paused(store, clock, "default", "soon", True)
    elif change == "edit":
        await schedules.update_job(store, clock, "default", "soon", overlap="allow")
    else:
        await schedules.delete_job(store, "default", "soon")
    await planner(store, horizon=15.0).tick(clock.now())  # plans nothing new
    assert await slot_runs(store, job.id) == [T0 + timedelta(minutes=1)]
    request = ClaimRequest("w", ("default",), 10, 60)
    assert await store.claim(request, T0 + timedelta(seconds=59)) == []  # not before
    [claimed] = await store.claim(request, T0 + timedelta(minutes=1))
    assert claimed.slot_at == T0 + timedelta(minutes=1)


class SteppedMonotonic:
    """A tick's duration as the test says: each reading is ``step`` seconds later."""

    def __init__(self) -> None:
        self.now = 0.0
        self.step = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def test_a_planner_that_falls_behind_looks_further_ahead(store: Store, clock, registry):
    # Every 10 s; horizon 10 s, so each tick sees the next slot. A tick that takes 12 s
    # commits that slot's run 2 s late: short of half the horizon (5 s) by 7 s.
    job = await make_job(store, clock, registry, "busy", cron="*/10 * * * * *")
    monotonic = SteppedMonotonic()
    plan = Planner(store, timedelta(seconds=10), monotonic)
    monotonic.step = 12.0  # its batch is committed 12 s after the tick began
    await plan.tick(T0)
    assert plan.lead == timedelta(seconds=7)
    # The next tick looks 17 s ahead: at T0 + 3 s the slot at T0 + 20 s is planned.
    monotonic.step = 0.0
    await plan.tick(T0 + timedelta(seconds=3))
    assert await slot_runs(store, job.id) == [T0 + timedelta(seconds=s) for s in (10, 20)]
    # Quick ticks with room to spare bring the lead back down.
    for second in range(4, 60):
        await plan.tick(T0 + timedelta(seconds=second))
    assert plan.lead < timedelta(seconds=2)


async def test_catching_up_on_past_slots_does_not_widen_the_lead(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "missed", cron="* * * * *", misfire="run_all")
    monotonic = SteppedMonotonic()
    monotonic.step = 30.0  # slow, but every slot it plans has passed already
    plan = Planner(store, timedelta(seconds=0), monotonic)
    await plan.tick(T0 + timedelta(minutes=10, seconds=30))
    assert len(await slot_runs(store, job.id)) == 10
    assert plan.lead == timedelta(0)


def test_a_pass_interrupted_by_a_long_gap_or_an_error_is_not_judged() -> None:
    """A pass left open (the tick's cap reached, then leadership lost or the database
    gone) must not judge the slots of the catch-up that follows against its old start."""

    def run_for(slot_at: datetime) -> NewRun:
        return NewRun(handler="report", payload_json="{}", slot_at=slot_at, run_at=slot_at)

    pace = Pace(timedelta(seconds=10))
    pace.begin(T0)
    pace.tick_ended(T0 + timedelta(seconds=1), pass_ended=False)  # cap reached: goes on
    later = T0 + timedelta(minutes=10)  # the next tick comes after an outage
    pace.begin(later)
    pace.committed([run_for(later - timedelta(minutes=5))], later)  # a missed slot
    pace.tick_ended(later, pass_ended=True)
    assert pace.lead == timedelta(0)
    pace.begin(T0)
    pace.abandon()  # the tick failed
    pace.begin(later)
    pace.committed([run_for(later - timedelta(minutes=5))], later)
    pace.tick_ended(later, pass_ended=True)
    assert pace.lead == timedelta(0)


async def test_a_slot_already_close_when_its_job_appears_does_not_widen_the_lead(
    store: Store, clock, registry
) -> None:
    """A job created (or resumed) 3 s before its slot has its run committed with 3 s to
    spare, less than half the horizon: the planner was not slow, so the lead stays."""
    job = await make_job(store, clock, registry, "fresh", cron="*/10 * * * * *")
    plan = Planner(store, timedelta(seconds=10), SteppedMonotonic())
    await plan.tick(T0 + timedelta(seconds=7))
    assert await slot_runs(store, job.id) == [T0 + timedelta(seconds=10)]
    assert plan.lead == timedelta(0)


def test_a_tick_that_plans_nothing_leaves_the_lead_alone() -> None:
    """Between slots most ticks find no due job: they say nothing of the pace, and
    must not wear the lead down before the next busy slot."""
    pace = Pace(timedelta(seconds=10), lead=timedelta(seconds=20))
    for second in range(30):
        now = T0 + timedelta(seconds=second)
        pace.begin(now)
        pace.tick_ended(now, pass_ended=True)
    assert pace.lead == timedelta(seconds=20)
