"""The cluster counts the leader's gauges and the dashboard's overview read: the same
numbers on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from rota.domain.states import TERMINAL_STATES, AttemptOutcome, RunState
from rota.domain.stats import FinishedCount, QueueCount
from rota.domain.workflows import StepSpec, WorkflowDefinition
from rota.store.port import Store

from .support import (
    T0,
    at,
    bounded,
    claim_one,
    count_finished,
    finished,
    new_run,
    peers,
    succeeded,
)


async def test_live_counts_per_namespace_queue_and_state(store: Store) -> None:
    assert await store.live_queue_counts(T0) == []
    await store.enqueue([new_run(queue="q1", run_at=at(5)), new_run(queue="q1", run_at=at(2))], T0)
    await store.enqueue([new_run(queue="q1", run_at=at(100))], T0)  # not due at at(10)
    await store.enqueue([new_run(queue="q2", namespace="team-b", run_at=at(1))], T0)
    running = await claim_one(store, at(10), queues=["q2"])
    done = await store.enqueue([new_run(queue="q1", run_at=at(3))], T0)
    assert done

    counts = await store.live_queue_counts(at(10))
    assert counts == [
        QueueCount("default", "q1", RunState.PENDING, 4, oldest_due_at=at(2)),
        QueueCount("team-b", "q2", RunState.CLAIMED, 1),
    ]
    await store.complete([finished(running, RunState.DEAD_LETTERED, AttemptOutcome.FAILED)], at(11))
    assert QueueCount("team-b", "q2", RunState.DEAD_LETTERED, 1) in await store.live_queue_counts(
        at(11)
    )
    # Nothing due yet: the count stays, the oldest due instant is empty.
    assert await store.live_queue_counts(T0) == [
        QueueCount("default", "q1", RunState.PENDING, 4),
        QueueCount("team-b", "q2", RunState.DEAD_LETTERED, 1),
    ]


async def test_finished_counts_are_bucketed_and_windowed(store: Store) -> None:
    await store.enqueue([new_run(queue="q1") for _ in range(3)], T0)
    first = await claim_one(store, at(1), queues=["q1"])
    await store.complete([succeeded(first)], at(61))  # bucket T0+60
    second = await claim_one(store, at(2), queues=["q1"])
    await store.complete([succeeded(second)], at(130))  # bucket T0+120
    third = await claim_one(store, at(3), queues=["q1"])
    await store.complete([finished(third, RunState.FAILED, AttemptOutcome.FAILED)], at(125))

    assert await store.finished_counts(at(60), 60) == [
        FinishedCount(at(60), "default", "q1", RunState.SUCCEEDED, 1),
        FinishedCount(at(120), "default", "q1", RunState.FAILED, 1),
        FinishedCount(at(120), "default", "q1", RunState.SUCCEEDED, 1),
    ]
    assert await store.finished_counts(at(62), 60) == [
        FinishedCount(at(120), "default", "q1", RunState.FAILED, 1),
        FinishedCount(at(120), "default", "q1", RunState.SUCCEEDED, 1),
    ]
    assert await store.finished_counts(at(0) - timedelta(hours=1), 3600) == [
        FinishedCount(at(0), "default", "q1", RunState.FAILED, 1),
        FinishedCount(at(0), "default", "q1", RunState.SUCCEEDED, 2),
    ]


@pytest.mark.parametrize("bucket", [0, -5, 86_401])
async def test_finished_counts_refuse_a_bucket_out_of_range(store: Store, bucket: int) -> None:
    with pytest.raises(ValueError, match=f"bucket_seconds={bucket} is not allowed"):
        await store.finished_counts(T0, bucket)


async def _finish_runs(store: Store, seconds: list[float], queue: str = "q1") -> None:
    """One run finished at each of ``seconds`` after T0 (alternately succeeded/failed)."""
    await store.enqueue([new_run(queue=queue) for _ in seconds], T0)
    for n, second in enumerate(seconds):
        claimed = await claim_one(store, T0, queues=[queue])
        outcome = (
            succeeded(claimed)
            if n % 2 == 0
            else finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)
        )
        await store.complete([outcome], at(second))


async def _finish_one_in_every_final_state(store: Store, second: float) -> None:
    """Runs of queue "q4" ending at T0 + second in each final state: a workflow's first
    step fails and so skips the second; the others end as completed."""
    steps = (StepSpec("top", "job"), StepSpec("below", "job", after=("top",)))
    flow = WorkflowDefinition("flow", steps)
    await store.start_workflow_run(flow, "{}", [new_run(queue="q4") for _ in range(2)], T0)
    top = await claim_one(store, T0, queues=["q4"])
    await store.complete([finished(top, RunState.FAILED, AttemptOutcome.FAILED)], at(second))
    ends = [
        (RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED),
        (RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT),
        (RunState.CANCELLED, AttemptOutcome.CANCELLED),
        (RunState.DEAD_LETTERED, AttemptOutcome.FAILED),
    ]
    await store.enqueue([new_run(queue="q4") for _ in ends], T0)
    for state, outcome in ends:
        claimed = await claim_one(store, T0, queues=["q4"])
        await store.complete([finished(claimed, state, outcome)], at(second))


async def test_counting_finished_minutes_changes_no_answer_and_is_read(store: Store) -> None:
    # Runs finished over ten minutes, some on a minute's edge, in every final state.
    await _finish_runs(store, [1, 59.5, 60, 61, 130, 170, 240, 300, 301, 420, 599])
    await _finish_runs(store, [65, 305], queue="q2")
    await _finish_one_in_every_final_state(store, 190)
    counted = await store.finished_counts(at(0), 60)
    assert {c.state for c in counted if c.queue == "q4"} == TERMINAL_STATES
    asked = [
        (since, bucket)
        for since in (at(0), at(30), at(60), at(61), at(-3600))
        for bucket in (60, 300, 3600, 7)
    ]
    before = {key: await store.finished_counts(*key) for key in asked}
    # At T0 + 10 min + settle, the minutes up to T0 + 10 min are counted (the charts'
    # rollup, which the finished counts read).
    await count_finished(store, at(660))
    for key in asked:
        assert await store.finished_counts(*key) == before[key], key
    # The counted minutes are read from the counts: pruning those runs changes nothing
    # the counts cover (here, everything before T0 + 10 min). The workflow's two steps
    # stay: they go with their workflow run.
    assert await store.prune_finished(at(420), limit=100) == 15
    assert await store.finished_counts(at(0), 300) == before[(at(0), 300)]
    # A run finishing late inside the recount window (the minute before the one last
    # counted: T0 + 9 min) is counted by the next count.
    await _finish_runs(store, [570], queue="q3")
    await count_finished(store, at(700))
    late = FinishedCount(at(300), "default", "q3", RunState.SUCCEEDED, 1)
    assert late in await store.finished_counts(at(0), 300)


async def test_counting_again_is_idempotent(store: Store) -> None:
    await _finish_runs(store, [10, 70, 130])
    await count_finished(store, at(300))
    await count_finished(store, at(300))
    assert await store.finished_counts(at(0), 60) == [
        FinishedCount(at(0), "default", "q1", RunState.SUCCEEDED, 1),
        FinishedCount(at(60), "default", "q1", RunState.FAILED, 1),
        FinishedCount(at(120), "default", "q1", RunState.SUCCEEDED, 1),
    ]


async def test_two_leaders_counting_at_once_count_each_run_once(store: Store) -> None:
    """A leader that lost its lease may still be counting when the next one starts: the
    recounts overlap. Each must leave the counts exact, and neither may fail (PostgreSQL
    refused the second's insert on the minutes the first had just written)."""
    await _finish_runs(store, [10, 70, 130, 190])
    async with peers(store, 1) as [other]:
        for later in range(300, 600, 20):  # every turn of both: the same recount at once
            await bounded(
                asyncio.gather(count_finished(store, at(later)), count_finished(other, at(later)))
            )
    counted = await store.finished_counts(at(0), 3600)
    assert sum(count.count for count in counted) == 4
