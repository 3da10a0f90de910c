"""Leader election over the store: the term only grows, and a deposed leader's writes
are rejected."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import rota
from rota.engine.leader import LeaderElector
from rota.store.port import ClaimRequest, Store
from tests.contract.support import peers
from tests.schedules.conftest import T0, make_job, planner, slot_runs


async def test_one_leader_at_a_time_and_takeover_after_expiry(store: Store, clock):
    async with peers(store, 2) as (a_store, b_store):
        a = LeaderElector(a_store, "a", lease_seconds=10, clock=clock)
        b = LeaderElector(b_store, "b", lease_seconds=10, clock=clock)
        terms = await asyncio.gather(a.attempt(), b.attempt())
        assert sorted(terms, key=lambda t: t is None) == [1, None], (
            "exactly one of two simultaneous candidates wins"
        )
        leader, follower = (a, b) if terms[0] == 1 else (b, a)

        clock.advance(seconds=5)
        assert await leader.attempt() == 1  # renewed
        assert await follower.attempt() is None
        clock.advance(seconds=10.001)  # the leader stopped renewing: its lease lapsed
        assert await follower.attempt() == 2
        assert await leader.attempt() is None  # deposed; it notices on its next try
        info = await store.leader()
        assert (info.holder, info.term) == (follower.node_id, 2)


async def test_resigning_hands_over_at_once(store: Store, clock):
    async with peers(store, 2) as (a_store, b_store):
        a = LeaderElector(a_store, "a", lease_seconds=30, clock=clock)
        b = LeaderElector(b_store, "b", lease_seconds=30, clock=clock)
        assert await a.attempt() == 1
        await a.resign()
        assert await b.attempt() == 2


async def test_a_deposed_leaders_writes_are_rejected(store: Store, clock, registry):
    job = await make_job(store, clock, registry, "minutely", cron="* * * * *")
    old = LeaderElector(store, "old", lease_seconds=10, clock=clock)
    assert await old.attempt() == 1
    run_id = (await store.enqueue([rota.domain.runs.NewRun("report", "{}")], T0))[0].run_id
    await store.claim(ClaimRequest("w", ("default",), 10, 30), T0)

    clock.advance(minutes=5)
    new = LeaderElector(store, "new", lease_seconds=10, clock=clock)
    assert await new.attempt() == 2

    # The old leader, unaware, plans and reaps with term 1: nothing changes.
    stale = await planner(store).tick(clock.now(), leader_term=1)
    assert stale.runs_created == 0
    assert stale.conflicts == 1
    assert await store.reap_expired(clock.now(), 3, 100, leader_term=1) == []
    assert await store.prune_finished(clock.now() + timedelta(days=999), 100, leader_term=1) == 0
    assert (await store.get_run(run_id)).state.is_active

    # The new leader's term works.
    fresh = await planner(store).tick(clock.now(), leader_term=2)
    # fire_now: one catch-up run for the missed minutes 1-4, and the slot at minute 5
    assert fresh.runs_created == 2
    assert len(await store.reap_expired(clock.now(), 3, 100, leader_term=2)) == 1
    assert await slot_runs(store, job.id) == [T0 + timedelta(minutes=4), T0 + timedelta(minutes=5)]
