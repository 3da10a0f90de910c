"""A database outage lets every lease lapse at once; the leader that gets back first
must give the workers time to renew instead of taking every run back as lost."""

from __future__ import annotations

import pytest

import rota
from rota.config import Settings
from rota.domain.runs import Lease, NewRun
from rota.domain.states import RunState
from rota.engine.housekeeping import Housekeeper
from rota.engine.leader import LeaderElector
from rota.store.port import ClaimRequest, Store
from rota.supervise import Reachability
from tests.faults import FaultyStore

pytestmark = pytest.mark.timeout(60)
LEASE = 30.0


async def _claimed(store: Store, clock: rota.FakeClock) -> Lease:
    """A run claimed by a worker whose lease then lapsed (the clock moved past it)."""
    [enqueued] = await store.enqueue([NewRun("report", "{}")], clock.db_now())
    [claimed] = await store.claim(ClaimRequest("w1", ("default",), 1, LEASE), clock.db_now())
    return Lease(enqueued.run_id, claimed.fence)


async def _outage(
    store: Store, clock: rota.FakeClock, settings: Settings, lasting: float
) -> Housekeeper:
    """A node whose election reached the database, then did not for ``lasting``
    seconds (no renewal got through either), then did again."""
    reachability = Reachability()
    faulty = FaultyStore(store)
    elector = LeaderElector(faulty, "a", 10.0, clock, reachability=reachability)  # type: ignore[arg-type]
    assert await elector.attempt() == 1
    faulty.fail("acquire_leadership", times=1)  # StoreUnavailable: the outage
    assert await elector.attempt() is None
    clock.advance(seconds=lasting)
    await elector.attempt()  # answered: back (leading again or not)
    return Housekeeper(store, settings, clock, reachability=reachability)


async def _state(store: Store, run_id: int) -> RunState:
    run = await store.get_run(run_id)
    assert run is not None
    return run.state


async def test_after_an_outage_the_reaper_waits_for_workers_to_renew(
    store: Store, clock: rota.FakeClock, settings: Settings
):
    settings = settings.with_overrides(lease_seconds=LEASE)
    lease = await _claimed(store, clock)
    keeper = await _outage(store, clock, settings, lasting=LEASE * 2)
    await keeper.reap_cycle()  # the lapsed lease is not taken yet
    assert await _state(store, lease.run_id) == RunState.CLAIMED

    # The worker reconnects and renews within the grace: it keeps its run.
    renewed = await store.renew("w1", [lease], LEASE, clock.db_now())
    assert lease.run_id not in renewed.lost
    clock.advance(seconds=keeper.outage_grace_seconds)
    await keeper.reap_cycle()
    assert await _state(store, lease.run_id) in (RunState.CLAIMED, RunState.RUNNING)
    assert await store.attempts(lease.run_id) == []  # no attempt spent, none lost


async def test_a_worker_that_died_in_the_outage_is_taken_back_after_the_grace(
    store: Store, clock: rota.FakeClock, settings: Settings
):
    settings = settings.with_overrides(lease_seconds=LEASE)
    lease = await _claimed(store, clock)
    keeper = await _outage(store, clock, settings, lasting=LEASE * 2)
    await keeper.reap_cycle()  # the lapsed lease is not taken yet
    assert await _state(store, lease.run_id) == RunState.CLAIMED
    clock.advance(seconds=keeper.outage_grace_seconds)
    await keeper.reap_cycle()  # nobody renewed: the worker is gone
    assert await _state(store, lease.run_id) == RunState.PENDING


async def test_without_an_outage_a_lapsed_lease_is_taken_back_at_once(
    store: Store, clock: rota.FakeClock, settings: Settings
):
    lease = await _claimed(store, clock)
    clock.advance(seconds=LEASE * 2)
    keeper = Housekeeper(store, settings.with_overrides(lease_seconds=LEASE), clock)
    await keeper.reap_cycle()
    assert await _state(store, lease.run_id) == RunState.PENDING


async def test_a_blip_shorter_than_a_renewal_holds_nothing_back(
    store: Store, clock: rota.FakeClock, settings: Settings
):
    settings = settings.with_overrides(lease_seconds=LEASE)
    lease = await _claimed(store, clock)
    clock.advance(seconds=LEASE * 2)  # the worker died long before
    keeper = await _outage(store, clock, settings, lasting=1.0)  # one broken connection
    await keeper.reap_cycle()
    assert await _state(store, lease.run_id) == RunState.PENDING
