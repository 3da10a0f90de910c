"""The leader's duties survive a dropped connection, a leader whose duties cannot run
hands the lease over, and a swallowed cancellation cannot wedge the election."""

from __future__ import annotations

import asyncio

import pytest

import rota
from rota.config import Settings
from rota.domain.states import RunState
from rota.engine.housekeeping import Housekeeper
from rota.engine.leader import LeaderElector
from rota.errors import StoreError
from rota.store.port import ClaimRequest, Store
from rota.supervise import cancel_and_wait
from tests.contract.support import peers
from tests.faults import FaultyStore
from tests.helpers import eventually
from tests.waiting import wait_for_state

# Real-time pacing of the loops (the database clock is the FakeClock): short, so the
# tests are quick; nothing below depends on how short.
LEADER_LEASE = 0.3
FAST = {
    "reap_interval_seconds": 0.02,
    "planner_interval_seconds": 0.02,
    "leader_lease_seconds": LEADER_LEASE,
}


@pytest.fixture
def fast(settings: Settings) -> Settings:
    return settings.with_overrides(**FAST)


async def _expired_run(store: Store, clock: rota.FakeClock) -> int:
    """A run whose worker vanished: claimed, and its lease long past."""
    [enqueued] = await store.enqueue([rota.domain.runs.NewRun("report", "{}")], clock.db_now())
    await store.claim(ClaimRequest("gone", ("default",), 1, 30), clock.db_now())
    clock.advance(seconds=60)
    return enqueued.run_id


async def test_a_duty_that_hits_a_dropped_connection_restarts_and_reaping_goes_on(
    store: Store, clock: rota.FakeClock, fast: Settings
):
    run_id = await _expired_run(store, clock)
    faulty = FaultyStore(store)
    faulty.fail("reap_expired", times=2)  # StoreUnavailable, as a dropped connection
    keeper = Housekeeper(faulty, fast, clock)  # type: ignore[arg-type]
    duties = asyncio.create_task(keeper.run(None))
    try:
        await wait_for_state(store, run_id, RunState.PENDING, what="the expired run reaped")
        assert keeper.restarts.of("leader-reaper") == 2  # each failure seen and counted
        assert not duties.done()  # the duties go on
    finally:
        await cancel_and_wait(duties, 5)


async def test_one_failing_duty_does_not_stop_the_others(
    store: Store, clock: rota.FakeClock, fast: Settings
):
    run_id = await _expired_run(store, clock)
    faulty = FaultyStore(store)
    faulty.fail("now")  # the planner (and pruning) cannot run at all
    keeper = Housekeeper(faulty, fast, clock)  # type: ignore[arg-type]
    duties = asyncio.create_task(keeper.run(None))
    try:
        await wait_for_state(store, run_id, RunState.PENDING, what="reaping")
    finally:
        await cancel_and_wait(duties, 5)


async def test_an_unreachable_store_during_the_election_is_a_failed_attempt(
    store: Store, clock: rota.FakeClock
):
    faulty = FaultyStore(store)
    faulty.fail("acquire_leadership", times=1)  # StoreUnavailable
    elector = LeaderElector(faulty, "a", LEADER_LEASE, clock)  # type: ignore[arg-type]
    assert await elector.attempt() is None  # not an exception that ends the election
    assert await elector.attempt() == 1


async def test_a_leader_whose_duties_keep_failing_hands_over(
    store: Store, clock: rota.FakeClock, fast: Settings
):
    run_id = await _expired_run(store, clock)
    async with peers(store, 2) as (a_store, b_store):
        broken = FaultyStore(a_store)
        broken.fail("reap_expired")  # a's reaper cannot run while this lasts
        a = LeaderElector(broken, "a", LEADER_LEASE, clock)  # type: ignore[arg-type]
        b = LeaderElector(b_store, "b", LEADER_LEASE, clock)
        a_task = asyncio.create_task(a.run(Housekeeper(broken, fast, clock).run))  # type: ignore[arg-type]
        await eventually(lambda: _true(a.term == 1), what="a leads")
        b_task = asyncio.create_task(b.run(Housekeeper(b_store, fast, clock).run))
        try:
            # The lease never lapses here (the FakeClock stands still): only a
            # resignation lets b lead, and b's reaper takes the run back.
            await eventually(lambda: _true(b.term is not None), what="b leads")
            await wait_for_state(store, run_id, RunState.PENDING, what="reaping")
            assert a.resignations >= 1
        finally:
            await cancel_and_wait(a_task, 5)
            await cancel_and_wait(b_task, 5)


async def test_a_swallowed_cancellation_does_not_wedge_the_election(
    store: Store, clock: rota.FakeClock, fast: Settings
):
    faulty = FaultyStore(store)
    in_pool_wait = asyncio.Event()
    faulty.swallow_cancel("now", in_pool_wait)  # the planner's first call
    elector = LeaderElector(faulty, "a", LEADER_LEASE, clock)  # type: ignore[arg-type]
    task = asyncio.create_task(elector.run(Housekeeper(faulty, fast, clock).run))  # type: ignore[arg-type]
    try:
        await eventually(lambda: _true(elector.term == 1), what="a leads")
        await asyncio.wait_for(in_pool_wait.wait(), 20)
        # A partition: the lease check fails, so the node stops leading and cancels its
        # duties, which swallow the cancellation in their "pool wait".
        faulty.fail("acquire_leadership", error=StoreError)
        await eventually(lambda: _true(elector.term is None), what="leadership lost")
        faulty.heal("acquire_leadership")
        clock.advance(seconds=LEADER_LEASE * 10)  # its old lease lapsed meanwhile
        await eventually(lambda: _true(elector.term == 2), what="the node leads again")
        await eventually(
            lambda: _true(not _tasks_named("rota-leader-duties-1")),
            what="the old term's duties stopped by themselves",
        )
    finally:
        await cancel_and_wait(task, 5)


async def _true(value: bool) -> bool:
    return value


def _tasks_named(name: str) -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == name]
