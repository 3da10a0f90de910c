"""Workflow definitions: save (checked as the library checks them), list, show, and
start a run of one by name. Namespaces and scopes as for jobs: reading needs
jobs:read, saving jobs:manage, starting jobs:trigger."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request

from rota.api.auth import Manager, Reader, Trigger
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.fields import IdempotencyKey, Name
from rota.api.schemas.workflows import (
    WorkflowCreate,
    WorkflowList,
    WorkflowOut,
    WorkflowRunStarted,
    WorkflowStart,
)
from rota.domain.access import Principal
from rota.domain.workflows import definition_from_json
from rota.errors import WorkflowNotFound
from rota.services import workflow_schedules
from rota.services import workflows as workflow_service

router = APIRouter(prefix="/api/v1/workflows", tags=["workflows"])
NamespaceQuery = Annotated[Name, Query(description="The workflow's namespace.")]


def _visible(principal: Principal, namespace: str, name: str) -> None:
    if not principal.can_see(namespace):
        raise WorkflowNotFound(namespace, name)


@router.post("", responses=responses(*AUTHENTICATED, 400, 404, 422))
async def save_workflow(
    request: Request, principal: Manager, context: Context, store: StoreDep, body: WorkflowCreate
) -> WorkflowOut:
    """Save a workflow definition (and its ``schedule``, if any), checked first: a
    cycle (named), an unknown parent or handler, a repeated step name, a map without
    ``over``, an unknown option, a bad option value or a bad schedule is refused (422)
    and nothing is written. A name taken in its namespace is replaced; ``version``
    counts the changes."""
    audit_target(request, f"workflow {body.namespace}/{body.name}", body.namespace)
    _visible(principal, body.namespace, body.name)
    raw = body.model_dump(exclude={"namespace"})
    raw["steps"] = [{k: v for k, v in s.items() if v is not None} for s in raw["steps"]]
    raw.pop("schedule")
    definition = definition_from_json(raw)
    registry = context.rota_app.registry
    schedule = None if body.schedule is None else body.schedule.schedule()
    stored, job = await workflow_schedules.save(
        store, context.clock, registry, definition, body.namespace, schedule
    )
    return WorkflowOut.of(stored, job)


@router.get("", responses=responses(*AUTHENTICATED))
async def list_workflows(
    principal: Reader, store: StoreDep, namespace: Annotated[Name | None, Query()] = None
) -> WorkflowList:
    """Every saved definition the caller can see (in one namespace, if given)."""
    found = await workflow_service.definitions(store, namespace, principal.namespaces)
    jobs = await workflow_schedules.schedules_of(store, namespace)
    return WorkflowList(
        items=[
            WorkflowOut.of(stored, jobs.get((stored.namespace, stored.name))) for stored in found
        ]
    )


@router.get("/{name}", responses=responses(*AUTHENTICATED, 404))
async def get_workflow(
    name: Name, principal: Reader, store: StoreDep, namespace: NamespaceQuery = "default"
) -> WorkflowOut:
    """One saved definition, with its version."""
    stored = await workflow_service.get(store, namespace, name, principal.namespaces)
    return WorkflowOut.of(stored, await workflow_schedules.schedule_of(store, namespace, name))


@router.post("/{name}/runs", status_code=202, responses=responses(*AUTHENTICATED, 400, 404, 422))
async def start_workflow(
    request: Request,
    name: Name,
    principal: Trigger,
    context: Context,
    store: StoreDep,
    body: Annotated[WorkflowStart | None, Body()] = None,
    namespace: NamespaceQuery = "default",
    idempotency_key: IdempotencyKey = None,
) -> WorkflowRunStarted:
    """Start a run of the saved workflow; its steps run in the workflow's namespace."""
    audit_target(request, f"workflow {namespace}/{name}", namespace)
    _visible(principal, namespace, name)
    payload = body.payload if body is not None else None
    registry = context.rota_app.registry
    workflow_run_id = await workflow_service.start(
        store, context.clock, registry, name, payload, namespace, idempotency_key
    )
    return WorkflowRunStarted(workflow_run_id=workflow_run_id)
