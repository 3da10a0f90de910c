"""Complete: fenced outcomes, the attempt history, retries, and the ambiguous-commit
check (recorded_outcomes)."""

from __future__ import annotations

import psycopg
import pytest

from rota.domain.runs import Lease, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store
from rota.store.postgres import PostgresStore

from .support import (
    T0,
    at,
    claim,
    claim_one,
    enqueue_one,
    finished,
    lease_of,
    retrying,
    state_of,
    succeeded,
)


async def test_succeeded_records_result_and_finish(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, at(1), worker_id="w-1")
    written = await store.complete([succeeded(claimed, '{"total":42}')], at(7))
    assert written == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.SUCCEEDED
    assert run.result == {"total": 42}
    assert run.error is None
    assert run.finished_at == at(7)
    assert run.lease_expires_at is None
    assert (run.attempt, run.fence) == (1, 1)
    [attempt] = await store.attempts(run_id)
    assert (attempt.run_id, attempt.attempt, attempt.fence) == (run_id, 1, 1)
    assert attempt.outcome is AttemptOutcome.SUCCEEDED
    assert attempt.worker_id == "w-1"
    assert attempt.started_at == at(1)
    assert attempt.finished_at == at(7)
    assert attempt.duration == 6.0
    assert attempt.error is None


async def test_complete_of_a_running_run(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.renew("worker-1", [lease_of(claimed)], 30.0, at(1))
    assert await state_of(store, run_id) is RunState.RUNNING
    assert await store.complete([succeeded(claimed)], at(2)) == {run_id}


@pytest.mark.parametrize(
    ("state", "outcome"),
    [
        (RunState.FAILED, AttemptOutcome.FAILED),
        (RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT),
        (RunState.CANCELLED, AttemptOutcome.CANCELLED),
        (RunState.DEAD_LETTERED, AttemptOutcome.FAILED),
    ],
)
async def test_terminal_failures_record_error_and_finish(
    store: Store, state: RunState, outcome: AttemptOutcome
) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    assert await store.complete([finished(claimed, state, outcome)], at(3)) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.error, run.finished_at) == (state, f"ended {state}", at(3))
    [attempt] = await store.attempts(run_id)
    assert (attempt.outcome, attempt.error) == (outcome, f"ended {state}")
    assert await claim(store, at(4), limit=5) == []


async def test_stale_fence_writes_nothing(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    stale = Outcome(run_id, claimed.fence - 1, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED, "1")
    ahead = Outcome(run_id, claimed.fence + 1, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED, "1")
    assert await store.complete([stale, ahead], at(1)) == set()
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.result, run.finished_at) == (RunState.CLAIMED, None, None)
    assert await store.attempts(run_id) == []


async def test_only_fresh_outcomes_of_a_batch_are_written(store: Store) -> None:
    first = await enqueue_one(store, T0)
    second = await enqueue_one(store, T0)
    a, b = await claim(store, T0, limit=2)
    assert {a.run_id, b.run_id} == {first, second}
    stale_b = Lease(b.run_id, b.fence + 5)
    written = await store.complete([succeeded(a), succeeded(stale_b)], at(1))
    assert written == {a.run_id}
    assert await state_of(store, b.run_id) is RunState.CLAIMED


async def test_complete_needs_an_active_run(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    # Never claimed: pending with fence 0.
    assert await store.complete([succeeded(Lease(run_id, 0))], T0) == set()
    claimed = await claim_one(store, T0)
    assert await store.release([lease_of(claimed)], at(1)) == {run_id}
    # Released: pending again, still fence 1, but no longer held.
    assert await store.complete([succeeded(claimed)], at(2)) == set()
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.PENDING
    assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.RELEASED]


async def test_complete_of_unknown_run_writes_nothing(store: Store) -> None:
    assert await store.complete([succeeded(Lease(999_999, 1))], T0) == set()
    assert await store.complete([], T0) == set()


async def test_retrying_moves_run_at_and_clears_the_lease(store: Store) -> None:
    run_id = await enqueue_one(store, T0, priority=5, max_attempts=3)
    claimed = await claim_one(store, at(10))
    assert await store.complete([retrying(claimed, delay=30.0)], at(20)) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.RETRYING
    assert run.run_at == at(50)
    assert run.error == "boom"
    assert run.finished_at is None
    assert run.lease_expires_at is None
    assert (run.attempt, run.fence) == (1, 1)
    [attempt] = await store.attempts(run_id)
    assert (attempt.outcome, attempt.error) == (AttemptOutcome.FAILED, "boom")
    # Not due before run_at; due at run_at, with the next attempt and fence.
    assert await claim(store, at(49)) == []
    again = await claim_one(store, at(50))
    assert (again.run_id, again.attempt, again.fence) == (run_id, 2, 2)


async def test_retry_keeps_its_priority_offset(store: Store) -> None:
    """sort_at - run_at stays -priority * aging after a retry moves run_at.

    Two priority-1 competitors bracket the retried run's sort_at by one second each
    side; only a kept offset puts the retried run between them."""
    aging = store.aging_seconds
    retried = await enqueue_one(store, T0, priority=10)
    claimed = await claim_one(store, T0)
    await store.complete([retrying(claimed, delay=30.0)], at(100))
    retried_sort = 130 - 10 * aging  # run_at (100 + 30) minus the priority boost
    before = await enqueue_one(store, at(100), priority=1, run_at=at(retried_sort - 1 + aging))
    after = await enqueue_one(store, at(100), priority=1, run_at=at(retried_sort + 1 + aging))
    order = [(await claim_one(store, at(130))).run_id for _ in range(3)]
    assert order == [before, retried, after]


async def test_an_attempt_row_is_written_once_per_fence(store: Store) -> None:
    run_id = await enqueue_one(store, T0, max_attempts=3)
    first = await claim_one(store, T0)
    await store.complete([retrying(first, delay=1.0)], at(1))
    second = await claim_one(store, at(2))
    await store.complete([succeeded(second)], at(3))
    # Late duplicates of both outcomes change nothing.
    assert await store.complete([retrying(first, delay=1.0), succeeded(second)], at(4)) == set()
    attempts = await store.attempts(run_id)
    assert [(a.fence, a.attempt, a.outcome) for a in attempts] == [
        (1, 1, AttemptOutcome.FAILED),
        (2, 2, AttemptOutcome.SUCCEEDED),
    ]
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.finished_at) == (RunState.SUCCEEDED, at(3))


async def test_completing_twice_second_writes_nothing_but_is_recorded(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    outcome = succeeded(claimed)
    assert await store.recorded_outcomes([outcome]) == set()
    assert await store.complete([outcome], at(1)) == {run_id}
    # A retry after an ambiguous commit: nothing new is written ...
    assert await store.complete([outcome], at(2)) == set()
    # ... and the check says the first write landed.
    assert await store.recorded_outcomes([outcome]) == {run_id}
    run = await store.get_run(run_id)
    assert run is not None
    assert run.finished_at == at(1)
    assert len(await store.attempts(run_id)) == 1


async def test_recorded_outcomes_ignores_a_different_outcome_under_the_same_fence(
    store: Store,
) -> None:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, T0, lease_seconds=10.0)
    [reaped] = await store.reap_expired(at(11), poison_after=5, limit=10)
    assert (reaped.run_id, reaped.fence) == (run_id, claimed.fence)
    # The reaper recorded 'lost' under this fence; the worker's success never landed.
    assert await store.recorded_outcomes([succeeded(claimed)]) == set()
    lost = Outcome(run_id, claimed.fence, RunState.PENDING, AttemptOutcome.LOST)
    assert await store.recorded_outcomes([lost]) == {run_id}
    wrong_fence = Outcome(run_id, claimed.fence + 1, RunState.PENDING, AttemptOutcome.LOST)
    assert await store.recorded_outcomes([wrong_fence]) == set()


@pytest.mark.postgres
async def test_a_success_is_kept_in_its_runs_row_and_read_once(pg_clean: str) -> None:
    """PostgreSQL writes no attempt row for a run a completion leaves succeeded (the
    run's row is that attempt, migration 31); reads see it as one attempt, also where a
    database migrated from before kept a row for it. A success that ends cancelled (the
    cancel came first) keeps its row."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        done_id = await enqueue_one(store, T0)
        cancelled_id = await enqueue_one(store, T0)
        done, cancelled = await claim(store, T0, limit=2)
        await store.request_cancel(cancelled_id, at(1))
        assert await store.complete([succeeded(done), succeeded(cancelled)], at(2)) == {
            done_id,
            cancelled_id,
        }
        async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
            cur = await conn.execute("SELECT run_id, outcome FROM rota_attempts")
            assert await cur.fetchall() == [(cancelled_id, "succeeded")]
            assert [
                (a.fence, a.worker_id, a.finished_at) for a in await store.attempts(done_id)
            ] == [(done.fence, "worker-1", at(2))]
            # As a database from before version 31 holds it: read once, not twice.
            await conn.execute(
                "INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at,"
                " finished_at, outcome) VALUES (%s, %s, 1, 'worker-1', %s, %s, 'succeeded')",
                (done_id, done.fence, T0, at(2)),
            )
        assert len(await store.attempts(done_id)) == 1
        assert [a.outcome for a in await store.attempts(cancelled_id)] == [AttemptOutcome.SUCCEEDED]
    finally:
        await store.close()
