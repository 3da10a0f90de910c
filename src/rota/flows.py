"""Workflow use cases shared by the library, API and CLI: register a definition,
start a run of it, cancel one, read one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rota.clock import Clock
from rota.domain.events import WorkflowStarts
from rota.domain.runs import NewRun
from rota.domain.values import check_id, encode_json
from rota.domain.workflow_runs import WorkflowRunView
from rota.domain.workflows import WorkflowDefinition, WorkflowInvalid, check_definition
from rota.handlers import Registry
from rota.services import RunRequest, new_run
from rota.store.port import Store


def checked(definition: WorkflowDefinition, registry: Registry | None) -> WorkflowDefinition:
    """``definition`` if it can run; handlers are checked when a registry is given."""
    known = None if registry is None else (lambda name: registry.get(name) is not None)
    check_definition(definition, known)
    return definition


def step_runs(registry: Registry, definition: WorkflowDefinition, payload: Any) -> list[NewRun]:
    """One run per step (in the definition's order) with the step's options over its
    handler's defaults; every value is checked as an enqueue checks it."""
    runs = []
    for step in definition.steps:
        request = RunRequest(step.handler, payload, **dict(step.options))
        runs.append(new_run(registry, request))
    return runs


def starting(registry: Registry, definitions: Mapping[str, WorkflowDefinition]) -> WorkflowStarts:
    """Start-by-name: the one place a workflow's name becomes its definition and its
    step runs, for :func:`start` and for events that start workflows. (When definitions
    move into the database, this is what reads them.)"""

    def resolve(name: str, payload: Any) -> tuple[WorkflowDefinition, list[NewRun]]:
        definition = definitions.get(name)
        if definition is None:
            raise WorkflowInvalid("workflow", name, "the name of a registered workflow")
        return definition, step_runs(registry, definition, payload)

    return resolve


async def start(
    store: Store,
    clock: Clock,
    registry: Registry,
    definitions: Mapping[str, WorkflowDefinition],
    name: str,
    payload: Any,
) -> int:
    payload_json = encode_json("payload", payload)
    definition, runs = starting(registry, definitions)(name, payload)
    return await store.start_workflow_run(definition, payload_json, runs, clock.db_now())


async def cancel(store: Store, clock: Clock, workflow_run_id: int) -> WorkflowRunView:
    check_id("workflow_run_id", workflow_run_id)
    await store.cancel_workflow_run(workflow_run_id, clock.db_now())
    return await store.workflow_run(workflow_run_id)


async def show(store: Store, workflow_run_id: int) -> WorkflowRunView:
    check_id("workflow_run_id", workflow_run_id)
    return await store.workflow_run(workflow_run_id)


async def recent(store: Store, name: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest workflow runs (of one workflow, if named), newest first."""
    check_id("limit", limit)
    return await store.list_workflow_runs(name, limit)
