"""Workflow use cases shared by the library, API and CLI: save a definition (checked),
read and list the saved ones, start a run of one by name, cancel a run, read one.

Definitions live in the database (rota_workflows) by (namespace, name): a process that
never registered a workflow in code (the API server, a leader's planner, an event
subscription) starts it from what was saved, through :func:`start`."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from rota.clock import Clock
from rota.domain.events import WorkflowStarts
from rota.domain.runs import NewRun, check_idempotency_key, check_name
from rota.domain.values import check_id, encode_json
from rota.domain.workflow_runs import WorkflowRunView
from rota.domain.workflows import StoredWorkflow, WorkflowDefinition, check_definition
from rota.errors import WorkflowNotFound, WorkflowRunNotFound
from rota.handlers import Registry
from rota.services.parameter_checks import off_loop
from rota.services.runs import Namespaces, RunRequest, new_run
from rota.store.port import Store


def checked(definition: WorkflowDefinition, registry: Registry | None) -> WorkflowDefinition:
    """``definition`` if it can run: the graph always; with a registry, every handler
    known and every step's options valid as an enqueue checks them."""
    known = None if registry is None else (lambda name: registry.get(name) is not None)
    check_definition(definition, known)
    if registry is not None:
        step_runs(registry, definition, None)  # refuses a bad option value; writes nothing
    return definition


def step_runs(
    registry: Registry, definition: WorkflowDefinition, payload: Any, namespace: str = "default"
) -> list[NewRun]:
    """One run per step (in the definition's order, in ``namespace``) with the step's
    options over its handler's defaults; every value is checked as an enqueue checks it."""
    runs = []
    for step in definition.steps:
        request = RunRequest(step.handler, payload, **dict(step.options))
        runs.append(dataclasses.replace(new_run(registry, request), namespace=namespace))
    return runs


async def save(
    store: Store,
    clock: Clock,
    registry: Registry,
    definition: WorkflowDefinition,
    namespace: str = "default",
) -> StoredWorkflow:
    """Create or replace the saved definition (namespace, name), checked first against
    ``registry``'s handlers: nothing is written for a definition that cannot run."""
    check_name("namespace", namespace)
    return await store.save_workflow(namespace, checked(definition, registry), clock.db_now())


async def get(
    store: Store, namespace: str, name: str, namespaces: Namespaces = None
) -> StoredWorkflow:
    """The saved definition; WorkflowNotFound also outside ``namespaces`` (None: all)."""
    check_name("namespace", namespace)
    check_name("workflow", name)
    found = await store.get_workflow(namespace, name)
    if found is None or (namespaces is not None and namespace not in namespaces):
        raise WorkflowNotFound(namespace, name)
    return found


async def definitions(
    store: Store, namespace: str | None = None, namespaces: Namespaces = None
) -> list[StoredWorkflow]:
    """Every saved definition (in ``namespace``, if given) within ``namespaces``."""
    found = await store.list_workflows(namespace)
    return [wf for wf in found if namespaces is None or wf.namespace in namespaces]


def starting(registry: Registry) -> WorkflowStarts:
    """The step runs of a saved workflow for a payload in a namespace, with ``registry``'s
    handler defaults: what an event's publish needs to start a subscribed workflow
    inside its own transaction (it reads the saved definition there; rota.services.events
    checks the payloads before it opens)."""
    return WorkflowStarts(functools.partial(step_runs, registry))


async def start(
    store: Store,
    clock: Clock,
    registry: Registry,
    name: str,
    payload: Any = None,
    namespace: str = "default",
    idempotency_key: str | None = None,
) -> int:
    """Start a run of the saved workflow (namespace, name) with ``payload``; its id.
    The one way every starter starts a workflow (the library, the API, the CLI,
    schedules, event subscriptions): the steps take their defaults from ``registry``,
    so its process must know the workflow's handlers. A starter that may run twice
    passes an ``idempotency_key``: a repeated key returns the first run's id."""
    check_idempotency_key(idempotency_key)
    stored = await get(store, namespace, name)
    payload = await off_loop(stored.definition.payload_of, payload)
    payload_json = encode_json("payload", payload)
    runs = step_runs(registry, stored.definition, payload, namespace)
    return await store.start_workflow_run(
        stored.definition, payload_json, runs, clock.db_now(), namespace, idempotency_key
    )


async def cancel(
    store: Store, clock: Clock, workflow_run_id: int, namespaces: Namespaces = None
) -> WorkflowRunView:
    await show(store, workflow_run_id, namespaces)
    await store.cancel_workflow_run(workflow_run_id, clock.db_now())
    return await store.workflow_run(workflow_run_id)


async def show(
    store: Store, workflow_run_id: int, namespaces: Namespaces = None
) -> WorkflowRunView:
    """The workflow run; WorkflowRunNotFound also outside ``namespaces`` (None: all), so
    a caller cannot tell another team's workflow run from a missing one."""
    check_id("workflow_run_id", workflow_run_id)
    view = await store.workflow_run(workflow_run_id)
    if namespaces is not None and view.namespace not in namespaces:
        raise WorkflowRunNotFound(workflow_run_id)
    return view


async def recent(
    store: Store,
    name: str | None,
    limit: int,
    namespace: str | None = None,
    namespaces: Namespaces = None,
) -> list[dict[str, Any]]:
    """The newest workflow runs (of one workflow, in one namespace, if named) within
    ``namespaces``, newest first."""
    check_id("limit", limit)
    reach = None if namespaces is None else sorted(namespaces)
    return await store.list_workflow_runs(name, limit, namespace, reach)
