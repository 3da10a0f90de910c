"""Workflows on a schedule, on both stores with the injected clock: the planner fires
the workflow's job once per slot, and that slot starts exactly one workflow run, even
when its starting run is attempted again."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

import rota
from rota.domain.workflows import WorkflowState
from rota.engine.planner import Planner
from rota.errors import InvalidArgument, JobNotFound
from rota.services import workflow_schedules
from tests.engine.conftest import working
from tests.helpers import eventually

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# 02:00 in Berlin (UTC+1 in winter) on the day after T0.
FIRST_SLOT = datetime(2026, 3, 2, 1, 0, tzinfo=UTC)


def nightly(app: rota.App, seen: list[Any]) -> rota.Workflow:
    @app.handler("extract")
    def extract(ctx: rota.RunContext, payload: Any) -> None:
        seen.append(ctx.workflow_payload)

    flow = rota.Workflow("nightly")
    flow.step("extract")
    return flow


async def started_runs(app: rota.App) -> list[dict[str, Any]]:
    return await (await app.store()).list_workflow_runs("nightly", 10)


async def test_a_slot_starts_exactly_one_workflow_run(make_app):
    clock = rota.FakeClock(T0)
    app = make_app(clock=clock)
    seen: list[Any] = []
    flow = nightly(app, seen)
    app.workflow(flow, cron="0 2 * * *", timezone="Europe/Berlin", payload={"day": "slot"})
    job = app.get_schedule("workflow:nightly")
    assert (job.spec.handler, job.next_fire_at) == (workflow_schedules.STARTER, FIRST_SLOT)

    store = await app.store()
    planner = Planner(store, timedelta(0))
    clock.set(FIRST_SLOT)
    await planner.tick(clock.now())
    await planner.tick(clock.now())  # a second tick at the same instant adds nothing
    [starter] = [run for run in app.list_runs() if run.job_id == job.id]
    assert starter.slot_at == FIRST_SLOT

    async with working(app):

        async def one_finished() -> list[dict[str, Any]] | None:
            found = await started_runs(app)
            if (
                found
                and (await store.workflow_run(found[0]["id"])).state is WorkflowState.SUCCEEDED
            ):
                return found
            return None

        [workflow_run] = await eventually(one_finished, timeout=30, what="the workflow run")
    assert seen == [{"day": "slot"}]
    assert app.get_run(starter.id).result == {"workflow_run_id": workflow_run["id"]}

    # The starting run attempted again (a worker died after starting the workflow run,
    # before recording it): the same workflow run, no second one.
    ctx = SimpleNamespace(run_id=starter.id, log=SimpleNamespace(info=lambda *a, **k: None))
    payload = {"workflow": "nightly", "payload": {"day": "slot"}}
    again = await workflow_schedules.start_from_run(store, clock, app.registry, ctx, payload)  # type: ignore[arg-type]
    assert again == {"workflow_run_id": workflow_run["id"]}
    assert len(await started_runs(app)) == 1

    # The next slot starts the next one.
    clock.set(FIRST_SLOT + timedelta(days=1))
    await planner.tick(clock.now())
    starters = [run for run in app.list_runs() if run.job_id == job.id]
    assert sorted(run.slot_at for run in starters if run.slot_at) == [
        FIRST_SLOT,
        FIRST_SLOT + timedelta(days=1),
    ]


async def test_skip_starts_nothing_while_the_last_run_is_unfinished(make_app):
    clock = rota.FakeClock(T0)
    app = make_app(clock=clock)
    release = threading.Event()

    @app.handler("extract")
    def extract(ctx: rota.RunContext, payload: Any) -> None:
        release.wait(timeout=20)  # the first workflow run stays unfinished until set

    flow = rota.Workflow("nightly")
    flow.step("extract")
    app.workflow(flow, interval=600, overlap="skip")
    job = app.get_schedule("workflow:nightly")
    payload = json.loads(job.spec.payload_json)
    assert payload == {"workflow": "nightly", "payload": None, "overlap": "skip"}
    store = await app.store()
    planner = Planner(store, timedelta(0))

    async def starter_result(slot: datetime) -> Any:
        async def finished() -> Any:
            [run] = [r for r in app.list_runs() if r.job_id == job.id and r.slot_at == slot]
            return run.result if run.state is rota.RunState.SUCCEEDED else None

        return await eventually(finished, timeout=30, what=f"the starting run of {slot}")

    async with working(app):
        first_slot = T0 + timedelta(minutes=10)
        clock.set(first_slot)
        await planner.tick(clock.now())
        first = (await starter_result(first_slot))["workflow_run_id"]

        second_slot = first_slot + timedelta(minutes=10)
        clock.set(second_slot)
        await planner.tick(clock.now())
        assert await starter_result(second_slot) == {"skipped_for": first}
        assert [row["id"] for row in await started_runs(app)] == [first]

        # The first slot's starting run attempted again while its workflow run still
        # runs: that is its own run, not one to make way for.
        [starter] = [r for r in app.list_runs() if r.job_id == job.id and r.slot_at == first_slot]
        ctx = SimpleNamespace(run_id=starter.id, log=SimpleNamespace(info=lambda *a, **k: None))
        again = await workflow_schedules.start_from_run(
            store,
            clock,
            app.registry,
            ctx,
            payload,  # type: ignore[arg-type]
        )
        assert again == {"workflow_run_id": first}

        release.set()

        async def first_done() -> bool:
            return (await store.workflow_run(first)).finished_at is not None

        await eventually(first_done, timeout=30, what="the first workflow run to finish")
        third_slot = second_slot + timedelta(minutes=10)
        clock.set(third_slot)
        await planner.tick(clock.now())
        third = (await starter_result(third_slot))["workflow_run_id"]
    assert [row["id"] for row in await started_runs(app)] == [third, first]


async def test_saving_without_a_schedule_removes_it_and_interval_and_at_work(make_app):
    clock = rota.FakeClock(T0)
    app = make_app(clock=clock)
    flow = nightly(app, [])
    app.workflow(flow, interval=600)
    assert app.get_schedule("workflow:nightly").next_fire_at == T0 + timedelta(minutes=10)
    app.workflow(flow, at=T0 + timedelta(hours=1), queue="starters")
    once = app.get_schedule("workflow:nightly")
    assert (once.next_fire_at, once.spec.queue) == (T0 + timedelta(hours=1), "starters")
    app.workflow(flow)  # manual now
    with pytest.raises(JobNotFound):
        app.get_schedule("workflow:nightly")
    assert app.get_workflow("nightly").version == 1, "the definition itself did not change"


@pytest.mark.parametrize(
    ("schedule", "named"),
    [
        ({"cron": "not a cron"}, "not a cron"),
        ({"cron": "0 2 * * *", "timezone": "Mars/Olympus"}, "Mars/Olympus"),
        ({"interval": -5}, "-5"),
        ({"at": T0 - timedelta(seconds=1)}, "an instant after now"),
        ({"cron": "0 2 * * *", "overlap": "buffer_one"}, "overlap: 'buffer_one'"),
        ({"cron": "0 2 * * *", "misfire": "sometimes"}, "sometimes"),
        ({"cron": "0 2 * * *", "colour": "red"}, "colour"),
        ({"cron": "0 2 * * *", "interval": 5}, "cron"),
    ],
)
def test_a_bad_schedule_writes_nothing(make_app, schedule: dict[str, Any], named: str):
    app = make_app(clock=rota.FakeClock(T0))
    flow = nightly(app, [])
    with pytest.raises(InvalidArgument, match=named.replace("(", r"\(")):
        app.workflow(flow, **schedule)
    assert app.list_workflows() == []
    assert app.list_schedules() == []


def test_a_template_start_missing_a_parameter_writes_nothing(make_app):
    app = make_app(clock=rota.FakeClock(T0))

    @app.handler("extract")
    def extract(ctx: rota.RunContext, payload: Any) -> None:
        return None

    schema = {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}
    flow = rota.Workflow("nightly", parameters=schema)
    flow.step("extract")
    assert app.workflow(flow).definition.parameters == schema
    with pytest.raises(InvalidArgument, match="invalid parameter 'day': expected a value"):
        app.start_workflow("nightly", {})
    assert app.list_runs() == []
    with pytest.raises(InvalidArgument, match="parameter 'day'"):
        app.workflow(flow, interval=60, payload={"day": 1})
    assert app.list_schedules() == []
    workflow_run_id = app.start_workflow("nightly", {"day": "d"})
    assert app.workflow_run(workflow_run_id).name == "nightly"
