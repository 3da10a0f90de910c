"""Cancel, replay and prune: what operators and housekeeping do to runs."""

from __future__ import annotations

import pytest

from rota.domain.runs import LogLine, RunFilter
from rota.domain.states import AttemptOutcome, RunState
from rota.errors import InvalidTransition, RunNotFound
from rota.store.port import Store

from .support import (
    T0,
    at,
    claim,
    claim_one,
    enqueue_one,
    finished,
    lease_of,
    retrying,
    succeeded,
)


# -- cancel ------------------------------------------------------------------
async def test_cancel_of_a_pending_run_is_immediate(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    run = await store.request_cancel(run_id, at(5))
    assert run.id == run_id
    assert run.state is RunState.CANCELLED
    assert run.finished_at == at(5)
    assert run.error == "cancelled by request"
    assert await claim(store, at(6), limit=5) == []
    # Asking again changes nothing and is not an error.
    again = await store.request_cancel(run_id, at(9))
    assert (again.state, again.finished_at) == (RunState.CANCELLED, at(5))


async def test_cancel_of_a_retrying_run_is_immediate(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.complete([retrying(claimed, delay=60.0)], at(1))
    run = await store.request_cancel(run_id, at(2))
    assert (run.state, run.finished_at) == (RunState.CANCELLED, at(2))
    assert await claim(store, at(100), limit=5) == []


async def test_cancel_of_an_active_run_sets_the_flag(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    run = await store.request_cancel(run_id, at(1))
    assert run.state is RunState.CLAIMED
    assert run.cancel_requested is True
    assert run.finished_at is None
    renewed = await store.renew("worker-1", [lease_of(claimed)], 30.0, at(2))
    assert renewed.cancel_requested == frozenset({run_id})
    assert renewed.lost == frozenset()
    # The worker stops the handler and records the cancellation under its fence.
    outcome = finished(claimed, RunState.CANCELLED, AttemptOutcome.CANCELLED)
    assert await store.complete([outcome], at(3)) == {run_id}
    done = await store.get_run(run_id)
    assert done is not None
    assert (done.state, done.finished_at) == (RunState.CANCELLED, at(3))


async def test_cancel_of_a_finished_run_is_an_invalid_transition(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.complete([succeeded(claimed)], at(1))
    with pytest.raises(InvalidTransition) as caught:
        await store.request_cancel(run_id, at(2))
    assert caught.value.run_id == run_id
    assert caught.value.state == "succeeded"
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.cancel_requested) == (RunState.SUCCEEDED, False)


async def test_cancel_of_an_unknown_run(store: Store) -> None:
    with pytest.raises(RunNotFound) as caught:
        await store.request_cancel(123_456, T0)
    assert caught.value.run_id == 123_456


# -- replay ------------------------------------------------------------------
async def _dead_lettered(store: Store) -> int:
    run_id = await enqueue_one(
        store,
        T0,
        handler="charge",
        payload='{"amount":5}',
        queue="billing",
        priority=8,
        max_attempts=1,
        timeout=4.0,
        namespace="acme",
        idempotency_key="charge-1",
    )
    claimed = await claim_one(store, T0, queues=["billing"])
    outcome = finished(claimed, RunState.DEAD_LETTERED, AttemptOutcome.FAILED)
    await store.complete([outcome], at(1))
    return run_id


async def test_replay_creates_a_fresh_pending_run(store: Store) -> None:
    old_id = await _dead_lettered(store)
    new_id = await store.replay(old_id, at(10))
    assert new_id != old_id
    new = await store.get_run(new_id)
    assert new is not None
    assert new.replay_of == old_id
    assert (new.handler, new.payload, new.queue) == ("charge", {"amount": 5}, "billing")
    assert (new.namespace, new.priority, new.max_attempts, new.timeout) == ("acme", 8, 1, 4.0)
    assert new.state is RunState.PENDING
    assert (new.attempt, new.fence, new.lost_count) == (0, 0, 0)
    assert (new.run_at, new.created_at) == (at(10), at(10))
    assert (new.result, new.error, new.finished_at) == (None, None, None)
    old = await store.get_run(old_id)
    assert old is not None
    assert old.state is RunState.DEAD_LETTERED  # replay never moves the old run
    [claimed] = await claim(store, at(11), limit=5, queues=["billing"])
    assert claimed.run_id == new_id


async def test_replaying_twice_returns_the_same_new_run(store: Store) -> None:
    old_id = await _dead_lettered(store)
    first = await store.replay(old_id, at(10))
    second = await store.replay(old_id, at(20))
    assert first == second
    runs = await store.list_runs(RunFilter())
    assert sorted(r.id for r in runs) == sorted({old_id, first})
    new = await store.get_run(first)
    assert new is not None
    assert new.created_at == at(10)


@pytest.mark.parametrize(
    ("state", "outcome"),
    [
        (RunState.FAILED, AttemptOutcome.FAILED),
        (RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT),
        (RunState.CANCELLED, AttemptOutcome.CANCELLED),
    ],
)
async def test_replay_from_each_replayable_state(
    store: Store, state: RunState, outcome: AttemptOutcome
) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.complete([finished(claimed, state, outcome)], at(1))
    new_id = await store.replay(run_id, at(2))
    new = await store.get_run(new_id)
    assert new is not None
    assert (new.state, new.replay_of) == (RunState.PENDING, run_id)


async def test_replay_of_a_run_cancelled_while_pending(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    await store.request_cancel(run_id, at(1))
    new_id = await store.replay(run_id, at(2))
    new = await store.get_run(new_id)
    assert new is not None
    assert new.replay_of == run_id


async def _run_in_state(store: Store, state: RunState) -> int:
    """A run driven to ``state`` (each in a queue of its own, so claims pick it)."""
    queue = f"q-{state}"
    run_id = await enqueue_one(store, T0, queue=queue)
    if state is RunState.PENDING:
        return run_id
    claimed = await claim_one(store, T0, queues=[queue])
    if state is RunState.RUNNING:
        await store.renew("worker-1", [lease_of(claimed)], 30.0, at(1))
    elif state is RunState.SUCCEEDED:
        await store.complete([succeeded(claimed)], at(1))
    elif state is RunState.RETRYING:
        await store.complete([retrying(claimed)], at(1))
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is state
    return run_id


@pytest.mark.parametrize(
    "state",
    [
        RunState.PENDING,
        RunState.CLAIMED,
        RunState.RUNNING,
        RunState.RETRYING,
        RunState.SUCCEEDED,
    ],
)
async def test_replay_of_a_live_or_succeeded_run_is_an_invalid_transition(
    store: Store, state: RunState
) -> None:
    run_id = await _run_in_state(store, state)
    with pytest.raises(InvalidTransition) as caught:
        await store.replay(run_id, at(2))
    assert (caught.value.run_id, caught.value.state) == (run_id, state.value)
    assert [r.id for r in await store.list_runs(RunFilter())] == [run_id]


async def test_replay_of_an_unknown_run(store: Store) -> None:
    with pytest.raises(RunNotFound):
        await store.replay(777_777, T0)


# -- prune -------------------------------------------------------------------
async def test_prune_deletes_old_finished_runs_with_their_history(store: Store) -> None:
    # Finished long ago: succeeded, dead-lettered by the reaper, cancelled while pending.
    old_done = await enqueue_one(store, T0)
    old_lost = await enqueue_one(store, T0, max_attempts=1)
    old_cancelled = await enqueue_one(store, T0)
    done = await claim_one(store, T0)
    assert done.run_id == old_done
    await store.complete([succeeded(done)], at(10))
    await store.append_logs([LogLine(old_done, 1, at(5), "info", "hello")], {old_done: done.fence})
    lost = await claim_one(store, T0, lease_seconds=5.0)
    assert lost.run_id == old_lost
    await store.reap_expired(at(6), poison_after=5, limit=10)
    await store.request_cancel(old_cancelled, at(20))
    # Not finished, however old: pending, claimed, retrying.
    pending = await enqueue_one(store, T0, queue="other")
    active_id = await enqueue_one(store, T0, queue="active")
    active = await claim_one(store, T0, queues=["active"])
    retry_id = await enqueue_one(store, T0, queue="retry")
    retry = await claim_one(store, T0, queues=["retry"])
    await store.complete([retrying(retry, delay=10.0)], at(1))
    # Finished after the cutoff.
    recent = await enqueue_one(store, at(100), queue="recent")
    recent_claim = await claim_one(store, at(100), queues=["recent"])
    await store.complete([succeeded(recent_claim)], at(200))
    await store.append_logs(
        [LogLine(recent, 1, at(150), "info", "kept")], {recent: recent_claim.fence}
    )

    assert await store.prune_finished(at(100), limit=100) == 3
    for gone in (old_done, old_lost, old_cancelled):
        assert await store.get_run(gone) is None
        assert await store.attempts(gone) == []
        assert await store.logs(gone) == []
    kept = {r.id for r in await store.list_runs(RunFilter())}
    assert kept == {pending, active_id, retry_id, recent}
    assert [a.outcome for a in await store.attempts(recent)] == [AttemptOutcome.SUCCEEDED]
    assert [line.message for line in await store.logs(recent)] == ["kept"]
    assert [a.outcome for a in await store.attempts(retry_id)] == [AttemptOutcome.FAILED]
    assert active.run_id == active_id
    assert await store.prune_finished(at(100), limit=100) == 0


async def test_prune_cutoff_is_strict_and_limit_is_respected(store: Store) -> None:
    ids = []
    for finish in (10, 20, 30):
        run_id = await enqueue_one(store, T0)
        claimed = await claim_one(store, T0)
        await store.complete([succeeded(claimed)], at(finish))
        ids.append(run_id)
    assert await store.prune_finished(at(10), limit=10) == 0  # finished_at == cutoff stays
    assert await store.prune_finished(at(31), limit=2) == 2  # oldest first
    assert {r.id for r in await store.list_runs(RunFilter())} == {ids[2]}
    assert await store.prune_finished(at(31), limit=2) == 1
    assert await store.list_runs(RunFilter()) == []


async def test_a_cancel_request_survives_a_lost_worker(store: Store) -> None:
    """The reaper does not hand a run someone asked to cancel to another worker."""
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.request_cancel(run_id, T0)
    await store.reap_expired(at(3600), poison_after=3, limit=10)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.CANCELLED
    assert run.fence == claimed.fence


async def test_a_cancel_request_outranks_a_retry(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.request_cancel(run_id, T0)
    assert await store.complete([retrying(claimed, delay=5)], T0) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.CANCELLED


async def test_a_cancel_request_survives_a_release(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.request_cancel(run_id, T0)
    assert await store.release([lease_of(claimed)], T0) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.CANCELLED
