"""How a workflow run ends in the store: its workflow.finished event, written once by the
transaction that makes its derived state final, and its pruning, whole, once every step
ended before the retention cutoff (never while it runs, never a step alone)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from rota.domain.runs import ClaimedRun
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.webhooks import Delivery, EventType, SubscriptionSpec, new_secret
from rota.domain.workflows import StepKind, StepSpec, WorkflowDefinition
from rota.errors import InvalidTransition, WorkflowRunNotFound
from rota.store.port import Store
from rota.store.sql_store import SqlStore
from rota.store.webhook_port import WebhookStore

from .support import T0, at, claim, claim_one, enqueue_one, finished, new_run, succeeded

TOP = StepSpec("top", "job")
BELOW = StepSpec("below", "job", after=("top",))
EACH = StepSpec("each", "job", kind=StepKind.MAP, over="top")
AFTER = StepSpec("after", "job", after=("each",))


async def start(store: Store, queue: str, *steps: StepSpec, now: datetime = T0) -> int:
    definition = WorkflowDefinition(f"flow-{queue}", steps)
    runs = [new_run(queue=queue) for _ in steps]
    return await store.start_workflow_run(definition, "{}", runs, now)


async def step(store: Store, queue: str, now: datetime) -> ClaimedRun:
    return await claim_one(store, now, queues=[queue])


def hooks(store: Store) -> WebhookStore:
    assert isinstance(store, SqlStore)  # the one store implements the webhook port too
    return store


async def subscribe(store: Store, **fields: Any) -> int:
    values: dict[str, Any] = {
        "namespace": "default",
        "url": "http://receiver.example/hook",
        "event_types": [EventType.WORKFLOW_FINISHED],
    }
    spec = SubscriptionSpec(**{**values, **fields})
    return (await hooks(store).create_subscription(spec, new_secret(b"k" * 32), T0)).id


async def events(store: Store, subscription_id: int) -> list[Delivery]:
    return await hooks(store).list_deliveries(subscription_id, None, 100)


# -- workflow.finished -----------------------------------------------------------
async def test_a_finished_workflow_run_is_announced_once_with_its_data(store: Store) -> None:
    subscribed = await subscribe(store)
    filtered = await subscribe(store, handler="job")  # a run filter: not for workflows
    run_events = await subscribe(store, event_types=[EventType.RUN_SUCCEEDED])
    workflow_run_id = await start(store, "wf", TOP, BELOW, now=T0)
    await store.complete([succeeded(await step(store, "wf", at(1)))], at(2))
    assert await events(store, subscribed) == []  # still running
    below = await step(store, "wf", at(3))
    await store.complete([succeeded(below)], at(5))
    [event] = await events(store, subscribed)
    assert event.event_type is EventType.WORKFLOW_FINISHED
    assert event.run_id == below.run_id  # the step whose end finished it
    data = {"id": workflow_run_id, "name": "flow-wf", "state": "succeeded"}
    assert event.event_data == {**data, "duration_seconds": 5.0}
    body = json.loads(event.body())
    assert body["type"] == "workflow.finished"
    assert body["data"] == {**data, "duration_seconds": 5.0}
    assert await events(store, filtered) == []
    assert {e.event_type for e in await events(store, run_events)} == {EventType.RUN_SUCCEEDED}


async def test_a_failed_step_skips_the_rest_and_the_run_is_announced_failed(store: Store) -> None:
    subscribed = await subscribe(store)
    await start(store, "wf", TOP, BELOW)
    top = await step(store, "wf", at(1))
    await store.complete([finished(top, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    [event] = await events(store, subscribed)
    assert event.event_data is not None
    assert event.event_data["state"] == "failed"


async def test_cancel_announces_once_even_when_map_items_end_later(store: Store) -> None:
    """A cancel makes the workflow run final at once (its map's own row is cancelled),
    though two of its items still run: their ends later add no second event."""
    subscribed = await subscribe(store)
    workflow_run_id = await start(store, "wf", TOP, EACH, AFTER)
    top = await step(store, "wf", at(1))
    await store.complete([succeeded(top, result="[1, 2, 3]")], at(2))
    items = await claim(store, at(3), queues=["wf"], limit=2)
    assert len(items) == 2
    await store.cancel_workflow_run(workflow_run_id, at(4))
    [event] = await events(store, subscribed)
    assert event.event_data is not None
    assert event.event_data["state"] == "cancelled"
    await store.complete([succeeded(items[0])], at(5))
    await store.complete([finished(items[1], RunState.CANCELLED, AttemptOutcome.CANCELLED)], at(6))
    await store.cancel_workflow_run(workflow_run_id, at(7))  # again: nothing to end
    assert len(await events(store, subscribed)) == 1


@pytest.mark.parametrize("ending", [RunState.SUCCEEDED, RunState.FAILED])
async def test_a_finished_workflow_run_refuses_a_cancel_and_keeps_its_history(
    store: Store, ending: RunState
) -> None:
    """As a finished single run does: a cancel would make a finished run read cancelled
    while its steps read what they did."""
    workflow_run_id = await start(store, "wf", TOP)
    top = await step(store, "wf", at(1))
    outcome = AttemptOutcome.SUCCEEDED if ending is RunState.SUCCEEDED else AttemptOutcome.FAILED
    await store.complete([finished(top, ending, outcome)], at(2))
    with pytest.raises(InvalidTransition, match=f"cancel workflow run {workflow_run_id}"):
        await store.cancel_workflow_run(workflow_run_id, at(3))
    view = await store.workflow_run(workflow_run_id)
    assert view.state == ending.value
    with pytest.raises(WorkflowRunNotFound):
        await store.cancel_workflow_run(workflow_run_id + 1000, at(3))


async def test_a_replay_that_reopens_a_finished_run_announces_its_new_end(store: Store) -> None:
    subscribed = await subscribe(store)
    await start(store, "wf", TOP, BELOW)
    top = await step(store, "wf", at(1))
    await store.complete([finished(top, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    await store.replay(top.run_id, at(3))
    assert len(await events(store, subscribed)) == 1  # running again: nothing new yet
    await store.complete([succeeded(await step(store, "wf", at(4)))], at(5))
    await store.complete([succeeded(await step(store, "wf", at(6)))], at(7))
    states = [e.event_data["state"] for e in await events(store, subscribed) if e.event_data]
    assert states == ["succeeded", "failed"]  # newest first


# -- pruning ---------------------------------------------------------------------
async def test_prune_takes_finished_workflow_runs_whole_and_keeps_running_ones(
    store: Store,
) -> None:
    done = await start(store, "done", TOP, BELOW)
    for second in (1, 3):
        claimed = await step(store, "done", at(second))
        await store.complete([succeeded(claimed)], at(second + 1))
    done_ids = [s.run_id for s in (await store.workflow_run(done)).steps]
    running = await start(store, "running", TOP, BELOW)
    running_top = await step(store, "running", at(1))
    await store.complete([succeeded(running_top)], at(2))  # below: Pending, for ever
    plain = await enqueue_one(store, T0, queue="plain")
    await store.complete([succeeded(await step(store, "plain", at(1)))], at(2))

    # Runs pruned alone leave every step in place, even one finished long ago.
    assert await store.prune_finished(at(100), limit=100) == 1
    assert await store.get_run(plain) is None
    assert await store.get_run(running_top.run_id) is not None
    assert all([await store.get_run(run_id or 0) for run_id in done_ids])

    assert await store.prune_workflow_runs(at(100), limit=100) == 1
    with pytest.raises(WorkflowRunNotFound):
        await store.workflow_run(done)
    for run_id in done_ids:
        assert run_id is not None
        assert await store.get_run(run_id) is None
        assert await store.attempts(run_id) == []
    view = await store.workflow_run(running)
    assert [s.state for s in view.steps] == [RunState.SUCCEEDED, RunState.PENDING]
    assert await store.prune_workflow_runs(at(100), limit=100) == 0


async def test_prune_waits_for_the_last_step_to_pass_the_cutoff(store: Store) -> None:
    workflow_run_id = await start(store, "wf", TOP, BELOW)
    await store.complete([succeeded(await step(store, "wf", at(1)))], at(2))
    await store.complete([succeeded(await step(store, "wf", at(150)))], at(200))
    assert await store.prune_workflow_runs(at(200), limit=100) == 0  # the cutoff is strict
    assert (await store.workflow_run(workflow_run_id)).steps
    assert await store.prune_workflow_runs(at(201), limit=100) == 1


# -- map_max_items ---------------------------------------------------------------
async def test_a_map_over_more_items_than_the_cap_fails_with_map_too_large(store: Store) -> None:
    """Issue 31: a map fanned out over any list in one completing transaction (a
    million items made a million runs in ~14 s). Past ``map_max_items`` the map step
    fails with MapTooLarge, naming the count and the cap, and makes no runs; the
    workflow run ends failed and is announced (workflow.finished), as when a map is
    given something that is not a list."""
    assert isinstance(store, SqlStore)
    store.map_max_items = 3
    subscribed = await subscribe(store)
    workflow_run_id = await start(store, "wf", TOP, EACH, AFTER)
    top = await step(store, "wf", at(1))
    await store.complete([succeeded(top, result="[1, 2, 3, 4]")], at(2))
    view = await store.workflow_run(workflow_run_id)
    each = next(s for s in view.steps if s.name == "each")
    assert each.state is RunState.FAILED
    assert each.error is not None
    assert each.error.startswith("MapTooLarge:")
    assert "got 4 items" in each.error
    assert "at most 3" in each.error
    assert not each.items, "no item runs were made"
    [event] = await events(store, subscribed)
    assert event.event_data is not None
    assert event.event_data["state"] == "failed"

    at_the_cap = await start(store, "ok", TOP, EACH, AFTER)
    top = await step(store, "ok", at(3))
    await store.complete([succeeded(top, result="[1, 2, 3]")], at(4))
    fanned = next(s for s in (await store.workflow_run(at_the_cap)).steps if s.name == "each")
    assert fanned.items is not None
    assert sum(fanned.items.values()) == 3
