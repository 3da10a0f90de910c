"""The cluster counts the leader's gauges and the dashboard's overview read: the same
numbers on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota.domain.states import AttemptOutcome, RunState
from rota.domain.stats import FinishedCount, QueueCount
from rota.store.port import Store

from .support import T0, at, claim_one, finished, new_run, succeeded


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
