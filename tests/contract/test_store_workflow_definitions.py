"""Saved workflow definitions and the namespace of workflow runs, on both stores."""

from __future__ import annotations

import dataclasses

from rota.domain.runs import RunFilter
from rota.domain.workflows import StepKind, StepSpec, WorkflowDefinition
from rota.store.port import Store

from .support import T0, at, new_run


def _definition(name: str = "etl", handler: str = "job") -> WorkflowDefinition:
    first = StepSpec("extract", handler)
    second = StepSpec("each", handler, StepKind.MAP, over="extract", options={"queue": "q"})
    return WorkflowDefinition(name, (first, second))


async def test_saving_again_counts_a_version_only_when_the_definition_changed(
    store: Store,
) -> None:
    saved = await store.save_workflow("default", _definition(), T0)
    assert (saved.namespace, saved.name, saved.version) == ("default", "etl", 1)
    assert saved.created_at == saved.updated_at == T0
    assert saved.definition == _definition()

    same = await store.save_workflow("default", _definition(), at(10))
    assert (same.version, same.updated_at) == (1, T0), "the same definition is no change"

    changed = await store.save_workflow("default", _definition(handler="other"), at(20))
    assert (changed.version, changed.created_at, changed.updated_at) == (2, T0, at(20))
    assert await store.get_workflow("default", "etl") == changed


async def test_definitions_are_kept_apart_by_namespace(store: Store) -> None:
    await store.save_workflow("team-b", _definition("etl"), T0)
    await store.save_workflow("team-a", _definition("etl"), T0)
    await store.save_workflow("team-a", _definition("aaa"), T0)
    listed = [(wf.namespace, wf.name) for wf in await store.list_workflows(None)]
    assert listed == [("team-a", "aaa"), ("team-a", "etl"), ("team-b", "etl")]
    assert [wf.name for wf in await store.list_workflows("team-b")] == ["etl"]
    assert await store.get_workflow("default", "etl") is None


async def test_a_workflow_run_and_its_steps_carry_its_namespace(store: Store) -> None:
    definition = _definition()
    steps = [dataclasses.replace(new_run(), namespace="team-a") for _ in definition.steps]
    in_a = await store.start_workflow_run(definition, "{}", steps, T0, "team-a")
    in_default = await store.start_workflow_run(definition, "{}", [new_run(), new_run()], T0)

    view = await store.workflow_run(in_a)
    assert view.namespace == "team-a"
    assert (await store.workflow_run(in_default)).namespace == "default"
    for step in view.steps:
        assert step.run_id is not None
        run = await store.get_run(step.run_id)
        assert run is not None
        assert run.namespace == "team-a"

    def ids(rows: list[dict[str, object]]) -> list[object]:
        return [row["id"] for row in rows]

    assert ids(await store.list_workflow_runs(None, 10)) == [in_default, in_a]
    assert ids(await store.list_workflow_runs(None, 10, "team-a")) == [in_a]
    assert ids(await store.list_workflow_runs(None, 10, None, ["team-a", "x"])) == [in_a]
    assert ids(await store.list_workflow_runs(None, 10, None, ["x"])) == []
    assert ids(await store.list_workflow_runs("etl", 10, "default", None)) == [in_default]


async def test_a_repeated_idempotency_key_starts_one_workflow_run(store: Store) -> None:
    definition = _definition()
    first = await store.start_workflow_run(
        definition, "{}", [new_run(), new_run()], T0, "default", "slot-1"
    )
    again = await store.start_workflow_run(
        definition, "{}", [new_run(), new_run()], T0, "default", "slot-1"
    )
    other = await store.start_workflow_run(
        definition, "{}", [new_run(), new_run()], T0, "default", "slot-2"
    )
    elsewhere = await store.start_workflow_run(
        definition, "{}", [new_run(), new_run()], T0, "team-a", "slot-1"
    )
    assert again == first
    assert len({first, other, elsewhere}) == 3
    runs = await store.list_workflow_runs(None, 10)
    assert sorted(row["id"] for row in runs) == sorted({first, other, elsewhere})
    view = await store.workflow_run(first)
    assert len(view.steps) == 2, "the repeat added no steps"
    assert len(await store.list_runs(RunFilter(limit=100))) == 6
