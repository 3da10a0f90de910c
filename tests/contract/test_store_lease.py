"""Renew and release: extending a lease, learning it was lost, handing a run back."""

from __future__ import annotations

from rota.domain.runs import Lease
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from .support import T0, at, claim, claim_one, enqueue_one, lease_of, state_of, succeeded


async def test_renew_extends_the_lease_and_marks_running(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0, lease_seconds=30.0)
    result = await store.renew("worker-1", [lease_of(claimed)], 60.0, at(20))
    assert result.lost == frozenset()
    assert result.cancel_requested == frozenset()
    assert result.lease_expires_at == at(80)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.RUNNING
    assert run.lease_expires_at == at(80)
    assert (run.attempt, run.fence) == (1, 1)
    # Renewing a running run keeps it running and extends again.
    again = await store.renew("worker-1", [lease_of(claimed)], 60.0, at(70))
    assert again.lease_expires_at == at(130)
    assert await state_of(store, run_id) is RunState.RUNNING


async def test_renewed_lease_is_not_reaped_at_the_old_expiry(store: Store) -> None:
    await enqueue_one(store, T0)
    claimed = await claim_one(store, T0, lease_seconds=30.0)
    await store.renew("worker-1", [lease_of(claimed)], 30.0, at(20))
    assert await store.reap_expired(at(40), poison_after=5, limit=10) == []


async def test_renew_reports_the_earliest_expiry_of_a_batch(store: Store) -> None:
    await enqueue_one(store, T0)
    await enqueue_one(store, T0)
    a = await claim_one(store, T0)
    b = await claim_one(store, T0)
    result = await store.renew("worker-1", [lease_of(a), lease_of(b)], 30.0, at(5))
    assert result.lost == frozenset()
    assert result.lease_expires_at == at(35)


async def test_renew_reports_lost_leases(store: Store) -> None:
    held_id = await enqueue_one(store, T0)
    done_id = await enqueue_one(store, T0)
    held = await claim_one(store, T0)
    done = await claim_one(store, T0)
    await store.complete([succeeded(done)], at(1))
    leases = [
        lease_of(held),
        Lease(held_id, held.fence + 1),  # a fence we never had
        lease_of(done),  # the run is no longer active
        Lease(987_654, 1),  # no such run
    ]
    result = await store.renew("worker-1", leases, 30.0, at(2))
    assert result.lost == frozenset({done_id, 987_654})
    assert result.lease_expires_at == at(32)
    done_run = await store.get_run(done_id)
    assert done_run is not None
    assert (done_run.state, done_run.lease_expires_at) == (RunState.SUCCEEDED, None)


async def test_renew_with_a_stale_fence_is_lost_and_changes_nothing(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0, lease_seconds=30.0)
    result = await store.renew("worker-1", [Lease(run_id, claimed.fence - 1)], 60.0, at(1))
    assert result.lost == frozenset({run_id})
    assert result.lease_expires_at is None
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.lease_expires_at) == (RunState.CLAIMED, at(30))


async def test_renew_after_the_reaper_took_the_run_is_lost(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0, lease_seconds=10.0)
    await store.reap_expired(at(11), poison_after=5, limit=10)
    result = await store.renew("worker-1", [lease_of(claimed)], 10.0, at(12))
    assert result.lost == frozenset({run_id})
    assert await state_of(store, run_id) is RunState.PENDING


async def test_renew_reports_cancel_requests(store: Store) -> None:
    asked_id = await enqueue_one(store, T0)
    other_id = await enqueue_one(store, T0)
    asked = await claim_one(store, T0)
    other = await claim_one(store, T0)
    assert {asked.run_id, other.run_id} == {asked_id, other_id}
    await store.request_cancel(asked_id, at(1))
    result = await store.renew("worker-1", [lease_of(asked), lease_of(other)], 30.0, at(2))
    assert result.cancel_requested == frozenset({asked_id})
    assert result.lost == frozenset()


async def test_renew_of_nothing(store: Store) -> None:
    result = await store.renew("worker-1", [], 30.0, T0)
    assert (result.lost, result.cancel_requested, result.lease_expires_at) == (
        frozenset(),
        frozenset(),
        None,
    )


async def test_release_hands_the_run_back_without_spending_an_attempt(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=2)
    claimed = await claim_one(store, at(1), worker_id="w-1")
    assert await store.release([lease_of(claimed)], at(5)) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.PENDING
    assert (run.attempt, run.fence) == (0, 1)  # the fence is kept: it only moves forward
    assert run.lease_expires_at is None
    assert run.finished_at is None
    [attempt] = await store.attempts(run_id)
    assert (attempt.fence, attempt.attempt) == (1, 1)
    assert attempt.outcome is AttemptOutcome.RELEASED
    assert (attempt.worker_id, attempt.started_at, attempt.finished_at) == ("w-1", at(1), at(5))
    assert attempt.error == "worker shut down before the run finished"

    again = await claim_one(store, at(6), worker_id="w-2")
    assert (again.run_id, again.attempt, again.fence) == (run_id, 1, 2)
    # The old lease is dead: its fence is stale.
    assert await store.release([lease_of(claimed)], at(7)) == set()
    assert await store.complete([succeeded(claimed)], at(7)) == set()
    assert await store.complete([succeeded(again)], at(8)) == {run_id}


async def test_release_of_a_running_run(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.renew("worker-1", [lease_of(claimed)], 30.0, at(1))
    assert await store.release([lease_of(claimed)], at(2)) == {run_id}
    assert await state_of(store, run_id) is RunState.PENDING


async def test_release_only_what_is_still_held(store: Store) -> None:
    held_id = await enqueue_one(store, T0)
    done_id = await enqueue_one(store, T0)
    held = await claim_one(store, T0)
    done = await claim_one(store, T0)
    await store.complete([succeeded(done)], at(1))
    released = await store.release(
        [lease_of(held), lease_of(done), Lease(held_id, 99), Lease(555_555, 1)], at(2)
    )
    assert released == {held_id}
    assert [a.outcome for a in await store.attempts(done_id)] == [AttemptOutcome.SUCCEEDED]
    assert [a.outcome for a in await store.attempts(held_id)] == [AttemptOutcome.RELEASED]
    assert await store.release([], at(3)) == set()
    assert [c.run_id for c in await claim(store, at(3), limit=5)] == [held_id]
