"""The settle rules (domain/settle.py) hold on both dialects.

Two of them stay in SQL, read in the same statement that writes the run (a cancel
request outranks a retry; a retry's sort_at keeps its lead). They are stated once in the
domain, and this one test holds both dialects' SQL to the domain's functions; the
reaper's verdict is decided in Python and the store only writes it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota.domain.runs import Lease
from rota.domain.settle import (
    completed_state,
    deadline_error,
    reap_verdict,
    released_state,
    retry_sort_at,
)
from rota.domain.states import RunState
from rota.store.port import Store

from .support import T0, at, claim_one, enqueue_one, retrying, succeeded


async def _raw(store: Store, run_id: int) -> dict[str, object]:
    """The stored row, sort_at included (the domain's Run does not carry it)."""
    [row] = await store._d.rows("get_run", {"id": run_id})  # type: ignore[attr-defined]
    return row  # type: ignore[no-any-return]


@pytest.mark.parametrize("cancel_requested", [False, True])
async def test_a_completion_writes_the_domains_state(store: Store, cancel_requested: bool) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    if cancel_requested:
        await store.request_cancel(run_id, at(1))
    assert await store.complete([retrying(claimed, delay=30.0)], at(2)) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is completed_state(RunState.RETRYING, cancel_requested)


@pytest.mark.parametrize("cancel_requested", [False, True])
async def test_a_success_after_a_cancel_request_ends_cancelled(
    store: Store, cancel_requested: bool
) -> None:
    """The handler returned before its worker learned of the cancel: the cancel the API
    acknowledged still holds, and no result is kept."""
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    if cancel_requested:
        await store.request_cancel(run_id, at(1))
    assert await store.complete([succeeded(claimed)], at(2)) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is completed_state(RunState.SUCCEEDED, cancel_requested)
    assert (run.result is None) is cancel_requested
    assert (run.error == "cancelled by request") is cancel_requested


@pytest.mark.parametrize("cancel_requested", [False, True])
async def test_a_release_writes_the_domains_state(store: Store, cancel_requested: bool) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    if cancel_requested:
        await store.request_cancel(run_id, at(1))
    assert await store.release([Lease(claimed.run_id, claimed.fence)], at(2)) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is released_state(cancel_requested)


async def test_a_retry_moves_sort_at_as_the_domain_says(store: Store) -> None:
    run_id = await enqueue_one(store, T0, priority=7)
    before = await _raw(store, run_id)
    claimed = await claim_one(store, T0)
    await store.complete([retrying(claimed, delay=45.0)], at(3))
    after = await _raw(store, run_id)
    assert after["run_at"] == at(48)
    assert after["sort_at"] == retry_sort_at(
        at(3),
        timedelta(seconds=45),
        before["run_at"],  # type: ignore[arg-type]
        before["sort_at"],  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("max_attempts", "losses_before", "cancel"),
    [
        (3, 0, False),  # back to pending
        (1, 0, False),  # the last attempt was spent
        (5, 1, False),  # poison: lost twice in a row (poison_after=2)
        (5, 0, True),  # a cancel request stands
    ],
)
async def test_the_reaper_writes_the_domains_verdict(
    store: Store, max_attempts: int, losses_before: int, cancel: bool
) -> None:
    poison_after = 2
    run_id = await enqueue_one(store, T0, max_attempts=max_attempts)
    clock = 0.0
    for _ in range(losses_before):  # lose the worker, then claim again
        await claim_one(store, at(clock), worker_id="w-gone", lease_seconds=5.0)
        await store.reap_expired(at(clock + 10), poison_after=poison_after, limit=10)
        clock += 20
    await claim_one(store, at(clock), worker_id="w-gone", lease_seconds=5.0)
    if cancel:
        await store.request_cancel(run_id, at(clock + 1))
    run = await store.get_run(run_id)
    assert run is not None
    expected = reap_verdict(
        cancel_requested=run.cancel_requested,
        lost_count=run.lost_count,
        attempt=run.attempt,
        max_attempts=run.max_attempts,
        poison_after=poison_after,
        worker_id=run.worker_id,
    )
    [reaped] = await store.reap_expired(at(clock + 10), poison_after=poison_after, limit=10)
    assert reaped.state is expected.state
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is expected.state
    assert run.error == expected.error
    assert (await store.attempts(run_id))[-1].error == expected.attempt_error


async def test_an_expired_deadline_writes_the_domains_error(store: Store) -> None:
    run_id = await enqueue_one(store, T0, deadline=at(60))
    assert await store.expire_deadlines(at(61)) == [run_id]
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.error) == (RunState.CANCELLED, deadline_error(at(60)))
