"""Workflows end to end on both stores: a real worker runs the steps; fan-out, fan-in,
trigger rules, cancel and replay."""

from __future__ import annotations

from typing import Any

import pytest

import rota
from rota.domain.states import RunState
from rota.domain.workflow_runs import WorkflowRunView
from rota.domain.workflows import WorkflowInvalid, WorkflowState
from rota.errors import WorkflowNotFound
from tests.engine.conftest import working
from tests.helpers import eventually


async def finished(app: rota.App, workflow_run_id: int) -> WorkflowRunView:
    store = await app.store()

    async def done() -> WorkflowRunView | None:
        view = await store.workflow_run(workflow_run_id)
        return view if view.state is not WorkflowState.RUNNING else None

    return await eventually(done, timeout=60, what=f"workflow run {workflow_run_id} to end")


def states(view: WorkflowRunView) -> dict[str, RunState]:
    return {step.name: step.state for step in view.steps}


async def test_diamond_fans_in_with_parents_results_and_the_payload(make_app):
    app = make_app()
    seen: dict[str, Any] = {}

    @app.handler("source")
    def source(ctx: rota.RunContext, payload: dict) -> int:
        return int(payload["n"])

    @app.handler("double")
    def double(ctx: rota.RunContext, payload: dict) -> int:
        return 2 * int(ctx.parents["source"])

    @app.handler("square")
    def square(ctx: rota.RunContext, payload: dict) -> int:
        return int(ctx.parents["source"]) ** 2

    @app.handler("join")
    def join(ctx: rota.RunContext, payload: dict) -> int:
        seen.update(parents=ctx.parents, payload=payload, workflow=ctx.workflow_payload)
        return int(ctx.parents["double"]) + int(ctx.parents["square"])

    flow = rota.Workflow("diamond")
    top = flow.step("source")
    left = flow.step("double", after=[top])
    right = flow.step("square", after=[top])
    flow.step("join", after=[left, right])
    app.workflow(flow)

    async with working(app):
        workflow_run_id = await app.start_workflow_async("diamond", {"n": 3})
        view = await finished(app, workflow_run_id)
    assert view.state is WorkflowState.SUCCEEDED
    assert seen == {
        "parents": {"double": 6, "square": 9},
        "payload": {"n": 3},
        "workflow": {"n": 3},
    }
    assert view.duration is not None
    assert view.duration >= 0


async def test_a_map_over_1000_items_then_fan_in(make_app):
    app = make_app()

    @app.handler("list")
    def make_list(ctx: rota.RunContext, payload: Any) -> list[int]:
        return list(range(1000))

    @app.handler("inc")
    def inc(ctx: rota.RunContext, item: int) -> int:
        return item + 1

    @app.handler("total")
    def total(ctx: rota.RunContext, payload: Any) -> int:
        return sum(ctx.parents["each"])

    flow = rota.Workflow("fan")
    listed = flow.step("list")
    each = flow.map("each", handler="inc", over=listed)
    flow.step("total", after=[each])
    app.workflow(flow)

    async with working(app, concurrency=16):
        workflow_run_id = await app.start_workflow_async("fan")
        view = await finished(app, workflow_run_id)
    assert view.state is WorkflowState.SUCCEEDED
    store = await app.store()
    total_run = await store.get_run(view.steps[2].run_id or 0)
    assert total_run is not None
    assert total_run.result == sum(range(1, 1001))
    assert view.steps[1].items == {"succeeded": 1000}


async def test_a_map_over_nothing_fans_in_at_once_and_a_non_list_fails_clearly(make_app):
    app = make_app()

    @app.handler("give")
    def give(ctx: rota.RunContext, payload: Any) -> Any:
        return payload

    @app.handler("each")
    def each(ctx: rota.RunContext, item: Any) -> Any:
        return item

    @app.handler("after")
    def after(ctx: rota.RunContext, payload: Any) -> Any:
        return ctx.parents["each"]

    flow = rota.Workflow("maybe-list")
    given = flow.step("give")
    mapped = flow.map("each", over=given)
    flow.step("after", after=[mapped])
    app.workflow(flow)

    async with working(app):
        empty = await finished(app, await app.start_workflow_async("maybe-list", []))
        scalar = await finished(app, await app.start_workflow_async("maybe-list", {"a": 1}))
    assert states(empty) == {
        "give": RunState.SUCCEEDED,
        "each": RunState.SUCCEEDED,
        "after": RunState.SUCCEEDED,
    }
    assert states(scalar)["each"] is RunState.FAILED
    assert scalar.steps[1].error == (
        "map step 'each' needs a list from step 'give'; it returned dict"
    )
    assert states(scalar)["after"] is RunState.SKIPPED
    assert scalar.state is WorkflowState.FAILED


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        ("all_succeeded", RunState.SKIPPED),
        ("all_done", RunState.SUCCEEDED),
        ("any_succeeded", RunState.SUCCEEDED),
    ],
)
async def test_trigger_rules_with_a_failing_parent(make_app, trigger, expected):
    app = make_app()

    @app.handler("ok")
    def ok(ctx: rota.RunContext, payload: Any) -> str:
        return "ok"

    @app.handler("broken", max_attempts=1)
    def broken(ctx: rota.RunContext, payload: Any) -> None:
        raise rota.PermanentFailure("no")

    @app.handler("below")
    def below(ctx: rota.RunContext, payload: Any) -> Any:
        return ctx.parents

    flow = rota.Workflow("rules")
    good = flow.step("ok")
    bad = flow.step("broken")
    flow.step("below", after=[good, bad], trigger=trigger)
    flow.step("tail", handler="ok", after=["below"])
    app.workflow(flow)

    async with working(app):
        view = await finished(app, await app.start_workflow_async("rules"))
    assert states(view)["broken"] is RunState.FAILED
    assert states(view)["below"] is expected
    assert states(view)["tail"] is expected
    assert view.state is WorkflowState.FAILED  # a step failed, whatever ran after it


async def test_any_succeeded_skips_when_every_parent_failed(make_app):
    app = make_app()

    @app.handler("broken", max_attempts=1)
    def broken(ctx: rota.RunContext, payload: Any) -> None:
        raise rota.PermanentFailure("no")

    @app.handler("below")
    def below(ctx: rota.RunContext, payload: Any) -> None:
        return None

    flow = rota.Workflow("none-ok")
    one = flow.step("one", handler="broken")
    two = flow.step("two", handler="broken")
    flow.step("below", after=[one, two], trigger="any_succeeded")
    app.workflow(flow)
    async with working(app):
        view = await finished(app, await app.start_workflow_async("none-ok"))
    assert states(view)["below"] is RunState.SKIPPED


async def test_cancel_mid_workflow_cancels_unfinished_steps(make_app):
    app = make_app()

    @app.handler("first")
    def first(ctx: rota.RunContext, payload: Any) -> None:
        ctx.cancelled.wait(30)  # held until the cancel reaches it

    @app.handler("second")
    def second(ctx: rota.RunContext, payload: Any) -> None:
        return None

    flow = rota.Workflow("long")
    flow.step("second", after=[flow.step("first")])
    app.workflow(flow)
    store = await app.store()
    async with working(app):
        workflow_run_id = await app.start_workflow_async("long")

        async def first_running() -> bool:
            view = await store.workflow_run(workflow_run_id)
            return states(view)["first"] in (RunState.CLAIMED, RunState.RUNNING)

        await eventually(first_running, what="the first step to start")
        await store.cancel_workflow_run(workflow_run_id, None)
        view = await finished(app, workflow_run_id)
    assert view.state is WorkflowState.CANCELLED
    assert states(view) == {"first": RunState.CANCELLED, "second": RunState.CANCELLED}


async def test_replaying_a_dead_step_rejoins_and_the_workflow_resumes(make_app):
    app = make_app()
    broken = {"on": True}

    @app.handler("flaky", max_attempts=1)
    def flaky(ctx: rota.RunContext, payload: Any) -> str:
        if broken["on"]:
            raise RuntimeError("down")
        return "up"

    @app.handler("after")
    def after(ctx: rota.RunContext, payload: Any) -> Any:
        return ctx.parents["flaky"]

    flow = rota.Workflow("resume")
    flow.step("after", after=[flow.step("flaky")])
    app.workflow(flow)
    store = await app.store()
    async with working(app):
        workflow_run_id = await app.start_workflow_async("resume")
        failed = await finished(app, workflow_run_id)
        assert states(failed) == {"flaky": RunState.DEAD_LETTERED, "after": RunState.SKIPPED}
        broken["on"] = False
        await store.replay(failed.steps[0].run_id or 0, None)
        view = await finished(app, workflow_run_id)
    assert view.state is WorkflowState.SUCCEEDED
    after_run = await store.get_run(view.steps[1].run_id or 0)
    assert after_run is not None
    assert after_run.result == "up"


def test_definitions_are_checked_when_registered(make_app):
    app = make_app()

    @app.handler("h")
    def h(ctx: rota.RunContext, payload: Any) -> None:
        return None

    flow = rota.Workflow("loop")
    flow.step("a", handler="h", after=["c"])
    flow.step("b", handler="h", after=["a"])
    flow.step("c", handler="h", after=["b"])
    with pytest.raises(WorkflowInvalid, match="'a → b → c → a'"):
        app.workflow(flow)
    unknown = rota.Workflow("unknown")
    unknown.step("a", handler="nobody")
    with pytest.raises(WorkflowInvalid, match="'nobody'; expected a registered handler"):
        app.workflow(unknown)
    with pytest.raises(WorkflowNotFound, match="workflow 'nothing' does not exist"):
        app.start_workflow("nothing")
    assert app.list_workflows() == []  # nothing refused was saved


async def test_replaying_a_dead_map_item_reopens_its_map_and_the_fan_in_runs(make_app):
    app = make_app()
    broken = {"on": True}

    @app.handler("three")
    def three(ctx: rota.RunContext, payload: Any) -> list[int]:
        return [1, 2, 3]

    @app.handler("item", max_attempts=1)
    def item(ctx: rota.RunContext, value: int) -> int:
        if value == 2 and broken["on"]:
            raise RuntimeError("two is down")
        return value * 10

    @app.handler("sum")
    def total(ctx: rota.RunContext, payload: Any) -> int:
        return sum(ctx.parents["each"])

    flow = rota.Workflow("item-replay")
    each = flow.map("each", handler="item", over=flow.step("three"))
    flow.step("sum", after=[each])
    app.workflow(flow)
    store = await app.store()
    async with working(app):
        workflow_run_id = await app.start_workflow_async("item-replay")
        failed = await finished(app, workflow_run_id)
        assert states(failed) == {
            "three": RunState.SUCCEEDED,
            "each": RunState.FAILED,
            "sum": RunState.SKIPPED,
        }
        dead = [
            run
            for run in await store.list_runs(rota.domain.runs.RunFilter(handler="item"))
            if run.state is RunState.DEAD_LETTERED
        ]
        assert len(dead) == 1
        broken["on"] = False
        await store.replay(dead[0].id, None)
        view = await finished(app, workflow_run_id)
    assert view.state is WorkflowState.SUCCEEDED
    sum_run = await store.get_run(view.steps[2].run_id or 0)
    assert sum_run is not None
    assert sum_run.result == 60


async def test_parents_finishing_at_once_on_two_workers_release_the_join_once(make_app):
    """Sixteen parallel parents of one join, finished by two workers (two stores, two
    connections) in concurrent transactions: without the workflow-run lock each could
    see the other still running and the join would never be released. Ten runs."""
    apps = [make_app(), make_app()]
    joins: list[int] = []
    for app in apps:

        @app.handler("part")
        def part(ctx: rota.RunContext, payload: Any) -> int:
            return 1

        @app.handler("join")
        def join(ctx: rota.RunContext, payload: Any) -> int:
            joins.append(ctx.run_id)
            return sum(ctx.parents.values())

        flow = rota.Workflow("wide")
        parts = [flow.step(f"part-{i}", handler="part") for i in range(16)]
        flow.step("join", after=parts)
        app.workflow(flow)

    async with (
        working(apps[0], concurrency=8, node_id="w1"),
        working(apps[1], concurrency=8, node_id="w2"),
    ):
        ids = [await apps[0].start_workflow_async("wide") for _ in range(10)]
        views = [await finished(apps[0], workflow_run_id) for workflow_run_id in ids]
    assert {view.state for view in views} == {WorkflowState.SUCCEEDED}
    assert sorted(joins) == sorted(view.steps[-1].run_id for view in views)
