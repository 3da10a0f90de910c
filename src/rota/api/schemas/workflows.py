"""Request and response bodies of the workflow definition routes. A definition's
graph is checked by rota.domain.workflows (the library's own checks), not here: the
models only give it shape, so the API and the library refuse the same things with the
same words."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rota.api.schemas.fields import Instant, Name, Request, Seconds
from rota.api.schemas.jobs import JobOut
from rota.domain.jobs import Job
from rota.domain.misfire import MisfirePolicy
from rota.domain.workflows import MAX_STEPS, StoredWorkflow
from rota.services.workflow_schedules import WorkflowSchedule


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


class WorkflowScheduleIn(Request):
    """When the workflow starts by itself: one of ``cron`` (in ``timezone``),
    ``interval_seconds`` or ``at`` (once). The leader's planner starts exactly one
    workflow run per slot, with ``payload``; the schedule is the job
    ``workflow:<name>`` (pause, resume and list it like any job)."""

    cron: str | None = Field(default=None, max_length=200, examples=["0 2 * * *"])
    interval_seconds: Seconds | None = None
    at: Instant | None = None
    timezone: str = Field(default="UTC", max_length=64, examples=["Europe/Berlin"])
    misfire: MisfirePolicy = MisfirePolicy.FIRE_NOW
    overlap: Literal["allow", "skip"] = Field(
        default="allow",
        description="skip: a slot starts nothing while an earlier run of the workflow is "
        "unfinished (its starting run's result names that run).",
    )
    catch_up_window_seconds: Annotated[float, Field(ge=0, le=10 * 365 * 24 * 3600)] = 3600.0
    jitter_seconds: Annotated[float, Field(ge=0, le=24 * 3600)] = 0.0
    queue: Name | None = Field(default=None, description="The starting run's queue.")
    payload: JsonValue = None

    def schedule(self) -> WorkflowSchedule:
        return WorkflowSchedule(
            cron=self.cron,
            interval=self.interval_seconds,
            at=self.at,
            timezone=self.timezone,
            misfire=self.misfire.value,
            overlap=self.overlap,
            payload=self.payload,
            options=_given(
                catch_up_window=self.catch_up_window_seconds,
                jitter=self.jitter_seconds,
                queue=self.queue,
            ),
        )


def _given(**options: Any) -> dict[str, Any]:
    return {key: value for key, value in options.items() if value is not None}


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
    schedule: WorkflowScheduleIn | None = Field(
        default=None, description="None: manual (a schedule saved before is removed)."
    )
    parameters: dict[str, JsonValue] | None = Field(
        default=None,
        description="A template's parameters: a JSON Schema (type object, with defaults) "
        "that every run's payload must fit; what it leaves out is filled from defaults.",
        examples=[{"type": "object", "properties": {"day": {"type": "string"}}}],
    )


class WorkflowOut(BaseModel):
    namespace: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime
    steps: list[dict[str, Any]]
    parameters: dict[str, Any] | None
    schedule: JobOut | None = Field(description="Its schedule's job, if it has one.")

    @classmethod
    def of(cls, stored: StoredWorkflow, schedule: Job | None) -> WorkflowOut:
        return cls(
            schedule=None if schedule is None else JobOut.of(schedule),
            parameters=(
                None if stored.definition.parameters is None else dict(stored.definition.parameters)
            ),
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
