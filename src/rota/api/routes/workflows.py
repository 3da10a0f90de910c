"""Workflow runs: one run's derived state and steps, its graph, and cancelling it.
A workflow run is seen only by callers who can see its namespace (as a run is).
Definitions: routes/workflow_defs.py."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel

from rota.api.auth import Reader, Trigger
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.fields import MAX_ID, Name
from rota.domain.workflow_runs import WorkflowRunView
from rota.services import workflows as workflow_service

router = APIRouter(prefix="/api/v1/workflow-runs", tags=["workflows"])
WorkflowRunId = Annotated[int, Path(ge=1, le=MAX_ID)]


class WorkflowStepOut(BaseModel):
    name: str
    run_id: int | None
    state: str
    error: str | None
    items: dict[str, int] | None  # a map's items by state


class WorkflowRunOut(BaseModel):
    id: int
    namespace: str
    name: str
    state: str
    created_at: datetime
    finished_at: datetime | None
    duration_seconds: float | None
    steps: list[WorkflowStepOut]

    @classmethod
    def of(cls, view: WorkflowRunView) -> WorkflowRunOut:
        return cls(
            id=view.id,
            namespace=view.namespace,
            name=view.name,
            state=view.state.value,
            created_at=view.created_at,
            finished_at=view.finished_at,
            duration_seconds=view.duration,
            steps=[
                WorkflowStepOut(
                    name=step.name,
                    run_id=step.run_id,
                    state=step.state.value,
                    error=step.error,
                    items=dict(step.items) if step.items is not None else None,
                )
                for step in view.steps
            ],
        )


class WorkflowNode(BaseModel):
    id: str
    kind: str
    state: str
    run_id: int | None
    items: dict[str, int] | None


class WorkflowGraph(BaseModel):
    workflow_run_id: int
    state: str
    nodes: list[WorkflowNode]
    edges: list[dict[str, str]]  # {"from": parent step, "to": child step}


class WorkflowRunSummary(BaseModel):
    id: int
    namespace: str
    name: str
    created_at: datetime
    cancelled_at: datetime | None


class WorkflowRunList(BaseModel):
    items: list[WorkflowRunSummary]


@router.get("", responses=responses(*AUTHENTICATED))
async def list_workflow_runs(
    principal: Reader,
    store: StoreDep,
    name: Annotated[Name | None, Query(description="Only runs of this workflow.")] = None,
    namespace: Annotated[Name | None, Query(description="Only runs in this namespace.")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> WorkflowRunList:
    """The newest workflow runs the caller can see, newest first (their state: GET one)."""
    rows = await workflow_service.recent(store, name, limit, namespace, principal.namespaces)
    return WorkflowRunList(items=[WorkflowRunSummary.model_validate(row) for row in rows])


@router.get("/{workflow_run_id}", responses=responses(*AUTHENTICATED, 404))
async def get_workflow_run(
    workflow_run_id: WorkflowRunId, principal: Reader, store: StoreDep
) -> WorkflowRunOut:
    """A workflow run: its derived state (running, succeeded, failed, cancelled), its
    duration, and each step's current run and state (a map's items counted by state)."""
    return WorkflowRunOut.of(
        await workflow_service.show(store, workflow_run_id, principal.namespaces)
    )


@router.get("/{workflow_run_id}/graph", responses=responses(*AUTHENTICATED, 404))
async def workflow_run_graph(
    workflow_run_id: WorkflowRunId, principal: Reader, store: StoreDep
) -> WorkflowGraph:
    """Nodes (steps with their state) and edges (parent -> child) of a workflow run."""
    view = await workflow_service.show(store, workflow_run_id, principal.namespaces)
    return WorkflowGraph.model_validate(view.graph())


@router.post("/{workflow_run_id}/cancel", responses=responses(*AUTHENTICATED, 404, 409))
async def cancel_workflow_run(
    request: Request,
    workflow_run_id: WorkflowRunId,
    principal: Trigger,
    context: Context,
    store: StoreDep,
) -> WorkflowRunOut:
    """Cancel every unfinished step: waiting ones at once, running ones are asked to stop.
    A workflow run that has finished (succeeded or failed) is refused with 409."""
    view = await workflow_service.show(store, workflow_run_id, principal.namespaces)
    audit_target(request, f"workflow run {workflow_run_id}", view.namespace)
    reach = principal.namespaces
    return WorkflowRunOut.of(
        await workflow_service.cancel(store, context.clock, workflow_run_id, reach)
    )
