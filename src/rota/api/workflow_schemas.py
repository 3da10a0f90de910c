"""Request and response bodies of the workflow definition routes. A definition's
graph is checked by rota.domain.workflows (the library's own checks), not here: the
models only give it shape, so the API and the library refuse the same things with the
same words."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rota.api.schemas import Name, Request
from rota.domain.workflows import MAX_STEPS, StoredWorkflow


class WorkflowStepIn(Request):
    name: str = Field(examples=["extract"])
    handler: str | None = Field(default=None, description="Default: the step's name.")
    kind: str = Field(default="step", description="step, or map (one run per item of over)")
    after: list[str] = Field(default_factory=list, description="Parent steps' names.")
    over: str | None = Field(default=None, description="A map's parent with the list.")
    trigger: str = Field(
        default="all_succeeded", description="all_succeeded, all_done or any_succeeded"
    )
    options: dict[str, JsonValue] = Field(
        default_factory=dict, description="queue, priority, max_attempts, timeout, tags"
    )


class WorkflowCreate(Request):
    """A workflow definition; saving one under a name taken in its namespace replaces
    it (its version counts the changes)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "nightly-etl",
                    "steps": [
                        {"name": "extract"},
                        {"name": "load-region", "kind": "map", "over": "extract"},
                        {"name": "report", "after": ["load-region"], "trigger": "all_done"},
                    ],
                }
            ]
        },
    )

    name: str
    namespace: Name = "default"
    steps: Annotated[list[WorkflowStepIn], Field(max_length=MAX_STEPS)]


class WorkflowOut(BaseModel):
    namespace: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime
    steps: list[dict[str, Any]]

    @classmethod
    def of(cls, stored: StoredWorkflow) -> WorkflowOut:
        return cls(
            namespace=stored.namespace,
            name=stored.name,
            version=stored.version,
            created_at=stored.created_at,
            updated_at=stored.updated_at,
            steps=stored.definition.to_json()["steps"],
        )


class WorkflowList(BaseModel):
    items: list[WorkflowOut]


class WorkflowStart(Request):
    """Start a run of the workflow with this payload (the steps' ``ctx.workflow_payload``)."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"payload": {"day": "2026-11-30"}}]}
    )

    payload: JsonValue = None


class WorkflowRunStarted(BaseModel):
    workflow_run_id: int
