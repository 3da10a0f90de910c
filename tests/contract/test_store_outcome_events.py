"""Every outcome is an event (issue 29 item 6): each statement that moves a run into a
state of ``EVENT_OF_RUN_STATE`` writes that state's event to the webhook outbox in the
same transaction. For every such move, a subscription to its event gets exactly one
delivery per run moved, and a subscription to every other run event gets none of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from rota.domain.misfire import OverlapPolicy
from rota.domain.overlap import overlap_key
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.webhooks import (
    BROADER_EVENT,
    EVENT_OF_RUN_STATE,
    Delivery,
    EventType,
    SubscriptionSpec,
    delivered_as,
    new_secret,
)
from rota.domain.workflows import StepSpec, WorkflowDefinition
from rota.store.port import Store
from rota.store.sql_store import SqlStore
from rota.store.webhook_port import WebhookStore

from .support import (
    T0,
    at,
    claim,
    claim_one,
    enqueue_one,
    finished,
    lease_of,
    new_run,
    retrying,
    state_of,
    succeeded,
)

SECRET = new_secret(b"o" * 32)
RUN_EVENTS = tuple(e for e in EventType if e.value.startswith("run."))


def hooks(store: Store) -> WebhookStore:
    assert isinstance(store, SqlStore)  # the one store implements the webhook port too
    return store


async def subscribe(store: Store, types: tuple[EventType, ...]) -> int:
    spec = SubscriptionSpec("default", "http://receiver.example/hook", types)
    return (await hooks(store).create_subscription(spec, SECRET, T0)).id


async def deliveries(store: Store, subscription_id: int) -> list[Delivery]:
    return await hooks(store).list_deliveries(subscription_id, None, 100)


# -- the moves: each makes some runs end in one state, and names them -----------------
Move = Callable[[Store], Awaitable[list[int]]]


async def complete_retrying(store: Store) -> list[int]:
    """Two failed attempts, each retried: two moves into Retrying, two events."""
    run_id = await enqueue_one(store, T0, max_attempts=3)
    await store.complete([retrying(await claim_one(store, at(1)), delay=0.0)], at(2))
    await store.complete([retrying(await claim_one(store, at(3)), delay=0.0)], at(4))
    return [run_id, run_id]


async def complete_timed_out(store: Store) -> list[int]:
    run_id = await enqueue_one(store, T0)
    claimed = await claim_one(store, at(1))
    await store.complete([finished(claimed, RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT)], at(2))
    return [run_id]


async def complete_cancel_outranks_a_retry(store: Store) -> list[int]:
    """A retry and a success of runs asked to cancel end Cancelled (settle.py
    completed_state): their event is run.cancelled, never run.retrying/succeeded."""
    first, second = await enqueue_one(store, T0), await enqueue_one(store, T0)
    claimed = await claim(store, at(1), limit=2)
    for run_id in (first, second):
        await store.request_cancel(run_id, at(2))
    by_id = {c.run_id: c for c in claimed}
    await store.complete([retrying(by_id[first]), succeeded(by_id[second])], at(3))
    return [first, second]


async def reap_cancelled(store: Store) -> list[int]:
    run_id = await enqueue_one(store, T0)
    await claim_one(store, at(1), lease_seconds=10.0)
    await store.request_cancel(run_id, at(2))
    await store.reap_expired(at(12), poison_after=5, limit=10)
    return [run_id]


async def release_cancelled(store: Store) -> list[int]:
    """A run handed back on shutdown ends Cancelled if asked to; one not asked goes back
    to Pending, which is no event."""
    asked, not_asked = await enqueue_one(store, T0), await enqueue_one(store, T0)
    claimed = await claim(store, at(1), limit=2)
    await store.request_cancel(asked, at(2))
    await store.release([lease_of(c) for c in claimed], at(3))
    assert await state_of(store, not_asked) is RunState.PENDING
    return [asked]


async def cancel_waiting(store: Store) -> list[int]:
    run_id = await enqueue_one(store, T0)
    await store.request_cancel(run_id, at(1))
    return [run_id]


async def deadline_expired(store: Store) -> list[int]:
    first = await enqueue_one(store, T0, deadline=at(1))
    second = await enqueue_one(store, T0, deadline=at(1))
    await enqueue_one(store, T0, deadline=at(100))  # not yet
    assert sorted(await store.expire_deadlines(at(2))) == [first, second]
    return [first, second]


async def overlap_skipped(store: Store) -> list[int]:
    key = overlap_key(OverlapPolicy.SKIP, 999)
    await enqueue_one(store, T0, queue="overlap", concurrency_key=key, concurrency_limit=1)
    await claim_one(store, at(1), queues=["overlap"])  # still running...
    run_id = await enqueue_one(
        store, at(2), queue="overlap", concurrency_key=key, concurrency_limit=1
    )
    assert await claim(store, at(3), queues=["overlap"], limit=10) == []  # ...so skipped
    return [run_id]


TOP = StepSpec("top", "job")
BELOW = StepSpec("below", "job", after=("top",))


async def start_flow(store: Store, queue: str) -> tuple[int, list[int]]:
    """A two-step workflow run: its id, and its steps' run ids in step order."""
    runs = [new_run(queue=queue) for _ in range(2)]
    definition = WorkflowDefinition(f"flow-{queue}", (TOP, BELOW))
    workflow_run_id = await store.start_workflow_run(definition, "{}", runs, T0)
    view = await store.workflow_run(workflow_run_id)
    return workflow_run_id, sorted(step.run_id for step in view.steps if step.run_id is not None)


async def step_skipped(store: Store) -> list[int]:
    """A failed step skips the one waiting on it (the default trigger rule)."""
    _, [_, below] = await start_flow(store, "wf-skip")
    claimed = await claim_one(store, at(1), queues=["wf-skip"])
    await store.complete([finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    assert await state_of(store, below) is RunState.SKIPPED
    return [below]


async def workflow_cancelled(store: Store) -> list[int]:
    """A workflow run's cancel ends its Pending and its Waiting steps in one statement."""
    workflow_run_id, steps = await start_flow(store, "wf-cancel")
    await store.cancel_workflow_run(workflow_run_id, at(1))
    return steps


@dataclass(frozen=True)
class Case:
    state: RunState
    move: Move


CASES = {
    "complete-retrying": Case(RunState.RETRYING, complete_retrying),
    "complete-timed-out": Case(RunState.TIMED_OUT, complete_timed_out),
    "complete-cancel-outranks": Case(RunState.CANCELLED, complete_cancel_outranks_a_retry),
    "reap-cancelled": Case(RunState.CANCELLED, reap_cancelled),
    "release-cancelled": Case(RunState.CANCELLED, release_cancelled),
    "cancel-waiting": Case(RunState.CANCELLED, cancel_waiting),
    "deadline-expired": Case(RunState.CANCELLED, deadline_expired),
    "overlap-skipped": Case(RunState.SKIPPED, overlap_skipped),
    "workflow-step-skipped": Case(RunState.SKIPPED, step_skipped),
    "workflow-cancelled": Case(RunState.CANCELLED, workflow_cancelled),
}


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
async def test_each_move_writes_one_event_per_run_to_its_subscribers_only(
    store: Store, case: Case
) -> None:
    event = EVENT_OF_RUN_STATE[case.state.value]
    only = await subscribe(store, (event,))
    # Every other run event, and not the broader one (it would get this event, as
    # that type: test_a_timed_out_run_is_still_a_failure_to_whom_names_only_that).
    others = await subscribe(
        store, tuple(e for e in RUN_EVENTS if e is not event and e is not BROADER_EVENT.get(event))
    )
    moved = await case.move(store)
    got = await deliveries(store, only)
    assert sorted(d.run_id for d in got) == sorted(moved)
    assert {d.event_type for d in got} == {event}
    assert {d.run_state for d in got} == {case.state.value}
    for run_id in moved:
        assert await state_of(store, run_id) is case.state
    assert [d for d in await deliveries(store, others) if d.run_id in moved] == []


async def test_a_timed_out_run_is_still_a_failure_to_whom_names_only_that(store: Store) -> None:
    """A subscription made before run.timed_out existed (run.failed, not run.timed_out)
    keeps getting timed-out runs as run.failed; one naming both gets one delivery, as
    run.timed_out; one naming neither, none."""
    subscriptions = {
        (EventType.RUN_FAILED,): await subscribe(store, (EventType.RUN_FAILED,)),
        (EventType.RUN_FAILED, EventType.RUN_TIMED_OUT): await subscribe(
            store, (EventType.RUN_FAILED, EventType.RUN_TIMED_OUT)
        ),
        (EventType.RUN_TIMED_OUT,): await subscribe(store, (EventType.RUN_TIMED_OUT,)),
        (EventType.RUN_SUCCEEDED,): await subscribe(store, (EventType.RUN_SUCCEEDED,)),
    }
    [run_id] = await complete_timed_out(store)
    for types, subscription_id in subscriptions.items():
        expected = delivered_as(EventType.RUN_TIMED_OUT, types)
        got = await deliveries(store, subscription_id)
        assert [(d.run_id, d.event_type, d.run_state) for d in got] == (
            [] if expected is None else [(run_id, expected, "timed_out")]
        ), types


async def test_a_move_the_map_does_not_name_writes_nothing(store: Store) -> None:
    """A run back to Pending (a release, a reaped lease with attempts left) is no
    outcome; a stale completion changes nothing and writes nothing."""
    everything = await subscribe(store, RUN_EVENTS)
    await enqueue_one(store, T0, max_attempts=3)
    claimed = await claim_one(store, at(1), lease_seconds=10.0)
    await store.reap_expired(at(12), poison_after=5, limit=10)  # back to Pending
    await store.complete([retrying(claimed)], at(13))  # stale: its fence moved on
    again = await claim_one(store, at(14))
    await store.release([lease_of(again)], at(15))
    assert await deliveries(store, everything) == []
