"""Reaping expired leases, the last attempt, and poison runs."""

from __future__ import annotations

import asyncio

from rota.domain.runs import ReapedRun
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from .support import (
    T0,
    at,
    bounded,
    claim,
    claim_one,
    enqueue_one,
    lease_of,
    peers,
    retrying,
    succeeded,
)


async def test_reap_takes_only_leases_expired_by_now(store: Store) -> None:
    short_id = await enqueue_one(store, T0)
    long_id = await enqueue_one(store, T0)
    await claim_one(store, T0, lease_seconds=10.0)
    await claim_one(store, T0, lease_seconds=60.0)
    await enqueue_one(store, T0)  # pending: nothing to reap
    assert await store.reap_expired(at(9), poison_after=5, limit=10) == []
    # Expiry is strict: at the expiry instant itself the lease still holds.
    assert await store.reap_expired(at(10), poison_after=5, limit=10) == []
    reaped = await store.reap_expired(at(11), poison_after=5, limit=10)
    assert reaped == [ReapedRun(short_id, 1, RunState.PENDING)]
    long_run = await store.get_run(long_id)
    assert long_run is not None
    assert long_run.state is RunState.CLAIMED


async def test_reaped_run_is_pending_again_with_its_attempt_kept(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=3)
    claimed = await claim_one(store, at(1), worker_id="w-dead", lease_seconds=10.0)
    await store.reap_expired(at(20), poison_after=5, limit=10)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.PENDING
    assert (run.attempt, run.fence, run.lost_count) == (1, 1, 1)  # the attempt is spent
    assert run.lease_expires_at is None
    assert run.finished_at is None
    [attempt] = await store.attempts(run_id)
    assert (attempt.fence, attempt.attempt, attempt.outcome) == (1, 1, AttemptOutcome.LOST)
    assert (attempt.worker_id, attempt.started_at, attempt.finished_at) == (
        "w-dead",
        at(1),
        at(20),
    )
    assert attempt.error is not None
    assert "w-dead" in attempt.error
    again = await claim_one(store, at(21))
    assert (again.run_id, again.attempt, again.fence, again.lost_count) == (run_id, 2, 2, 1)
    assert claimed.fence != again.fence


async def test_reap_respects_limit_oldest_expiry_first(store: Store) -> None:
    ids = [await enqueue_one(store, T0) for _ in range(3)]
    for seconds in (30.0, 10.0, 20.0):
        await claim_one(store, T0, lease_seconds=seconds)
    reaped = await store.reap_expired(at(100), poison_after=5, limit=2)
    assert [r.run_id for r in reaped] == [ids[1], ids[2]]
    rest = await store.reap_expired(at(100), poison_after=5, limit=2)
    assert [r.run_id for r in rest] == [ids[0]]


async def test_lease_lost_on_the_last_attempt_dead_letters(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=2)
    first = await claim_one(store, T0, lease_seconds=10.0)
    await store.complete([retrying(first, delay=5.0)], at(1))
    await claim_one(store, at(6), lease_seconds=10.0, worker_id="w-last")
    [reaped] = await store.reap_expired(at(17), poison_after=5, limit=10)
    assert reaped == ReapedRun(run_id, 2, RunState.DEAD_LETTERED)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.DEAD_LETTERED
    assert (run.attempt, run.lost_count) == (2, 1)
    assert run.finished_at == at(17)
    assert run.error is not None
    assert "last attempt" in run.error
    assert "w-last" in run.error
    assert [a.outcome for a in await store.attempts(run_id)] == [
        AttemptOutcome.FAILED,
        AttemptOutcome.LOST,
    ]
    assert await claim(store, at(18), limit=5) == []


async def test_a_run_that_keeps_losing_its_worker_is_poison(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=10)
    now = 0
    for lost in (1, 2):
        await claim_one(store, at(now), lease_seconds=10.0)
        now += 11
        [reaped] = await store.reap_expired(at(now), poison_after=3, limit=10)
        assert reaped.state is RunState.PENDING
        run = await store.get_run(run_id)
        assert run is not None
        assert run.lost_count == lost
    await claim_one(store, at(now), lease_seconds=10.0)
    [reaped] = await store.reap_expired(at(now + 11), poison_after=3, limit=10)
    assert reaped == ReapedRun(run_id, 3, RunState.DEAD_LETTERED)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.DEAD_LETTERED
    assert (run.attempt, run.lost_count) == (3, 3)
    assert run.error is not None
    assert run.error.startswith("poison")
    assert run.finished_at == at(now + 11)
    assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.LOST] * 3


async def test_poison_after_one_dead_letters_at_the_first_loss(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=10)
    await claim_one(store, T0, lease_seconds=10.0)
    [reaped] = await store.reap_expired(at(11), poison_after=1, limit=10)
    assert reaped == ReapedRun(run_id, 1, RunState.DEAD_LETTERED)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.error is not None
    assert run.error.startswith("poison")


async def test_stale_worker_cannot_complete_after_being_reaped(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=5)
    stale = await claim_one(store, T0, lease_seconds=10.0)
    await store.reap_expired(at(11), poison_after=5, limit=10)
    # Reaped but not yet reclaimed: same fence, but the run is no longer held.
    assert await store.complete([succeeded(stale)], at(12)) == set()
    fresh = await claim_one(store, at(13))
    # Reclaimed: the stale fence is behind.
    assert await store.complete([succeeded(stale)], at(14)) == set()
    renewed = await store.renew("stale", [lease_of(stale)], 10.0, at(14))
    assert renewed.lost == frozenset({run_id})
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.fence, run.result) == (RunState.CLAIMED, fresh.fence, None)
    assert await store.complete([succeeded(fresh)], at(15)) == {run_id}
    assert [(a.fence, a.outcome) for a in await store.attempts(run_id)] == [
        (1, AttemptOutcome.LOST),
        (2, AttemptOutcome.SUCCEEDED),
    ]


async def test_completion_resets_lost_count(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=5)
    await claim_one(store, T0, lease_seconds=10.0)
    await store.reap_expired(at(11), poison_after=3, limit=10)
    second = await claim_one(store, at(12), lease_seconds=10.0)
    assert second.lost_count == 1
    await store.complete([retrying(second, delay=1.0)], at(13))
    run = await store.get_run(run_id)
    assert run is not None
    assert run.lost_count == 0
    # Two more losses in a row are not yet poison (3 would be, had it not been reset).
    third = await claim_one(store, at(14), lease_seconds=10.0)
    assert third.lost_count == 0
    [reaped] = await store.reap_expired(at(25), poison_after=3, limit=10)
    assert reaped.state is RunState.PENDING
    await claim_one(store, at(26), lease_seconds=10.0)
    [reaped] = await store.reap_expired(at(37), poison_after=3, limit=10)
    assert reaped.state is RunState.PENDING


async def test_completion_racing_the_reaper_has_one_winner_per_run(store: Store) -> None:
    """Twenty expired leases: one worker completes them all while a reaper reaps them
    all, on separate connections. Each run ends up with exactly one of the two."""
    ids = {await enqueue_one(store, T0) for _ in range(20)}
    claimed = await claim(store, T0, limit=20, lease_seconds=10.0)
    assert {c.run_id for c in claimed} == ids
    async with peers(store, 2) as (worker, reaper):
        written, reaped = await bounded(
            asyncio.gather(
                worker.complete([succeeded(c) for c in claimed], at(11)),
                reaper.reap_expired(at(11), poison_after=5, limit=100),
            )
        )
    reaped_ids = {r.run_id for r in reaped}
    assert written | reaped_ids == ids
    assert not written & reaped_ids
    for run_id in ids:
        run = await store.get_run(run_id)
        assert run is not None
        [attempt] = await store.attempts(run_id)
        if run_id in written:
            assert (run.state, attempt.outcome) == (RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED)
        else:
            assert (run.state, attempt.outcome) == (RunState.PENDING, AttemptOutcome.LOST)
