"""A job's bodies: its definition (create, update), the job as read back with its recent
starts, and a trigger."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rota.api.schemas.fields import Instant, LabelsIn, Name, OwnerIn, Priority, Request, Seconds
from rota.domain.jobs import Job, RecentStart, TriggerKind
from rota.domain.misfire import MisfirePolicy, OverlapPolicy


class JobFields(Request):
    """A job's definition. At most one of ``cron``, ``interval_seconds`` and ``at``: a
    job with none is manual (it runs when triggered)."""

    handler: Name
    payload: JsonValue = None
    cron: str | None = Field(default=None, max_length=200, examples=["0 2 * * *"])
    interval_seconds: Seconds | None = None
    at: Instant | None = None
    timezone: str = Field(default="UTC", max_length=64, examples=["Europe/Berlin"])
    misfire: MisfirePolicy = MisfirePolicy.FIRE_NOW
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    catch_up_window_seconds: Annotated[float, Field(ge=0, le=10 * 365 * 24 * 3600)] = 3600.0
    run_all_cap: Annotated[int, Field(ge=1, le=10_000)] = 100
    jitter_seconds: Annotated[float, Field(ge=0, le=24 * 3600)] = 0.0
    queue: Name | None = None
    priority: Priority | None = None
    max_attempts: Annotated[int, Field(ge=1, le=1000)] | None = None
    timeout_seconds: Seconds | None = None
    owner: OwnerIn | None = Field(None, description="Its runs' owner.")
    labels: LabelsIn | None = Field(None, description="Its runs' labels.")
    parameters: dict[str, JsonValue] | None = Field(
        default=None,
        description="A template's parameters: a JSON Schema (type object, with defaults) "
        "that the job's payload and every trigger's payload must fit; defaults fill in "
        "what a payload leaves out. Set on create only.",
    )


class JobCreate(JobFields):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "nightly-report",
                    "handler": "send-report",
                    "cron": "0 2 * * *",
                    "timezone": "Europe/Berlin",
                    "payload": {"to": "team@example.com"},
                },
                {"name": "adhoc-export", "handler": "export-csv", "payload": {"rows": 500}},
            ]
        },
    )

    name: Name
    namespace: Name = "default"


class JobUpdate(Request):
    """Only the fields given change. Giving one of ``cron``, ``interval_seconds`` or
    ``at`` replaces the schedule; setting it to null makes the job manual."""

    handler: Name | None = None
    payload: JsonValue = None
    cron: str | None = Field(default=None, max_length=200)
    interval_seconds: Seconds | None = None
    at: Instant | None = None
    timezone: str | None = Field(default=None, max_length=64)
    misfire: MisfirePolicy | None = None
    overlap: OverlapPolicy | None = None
    catch_up_window_seconds: Annotated[float, Field(ge=0, le=10 * 365 * 24 * 3600)] | None = None
    run_all_cap: Annotated[int, Field(ge=1, le=10_000)] | None = None
    jitter_seconds: Annotated[float, Field(ge=0, le=24 * 3600)] | None = None
    queue: Name | None = None
    priority: Priority | None = None
    max_attempts: Annotated[int, Field(ge=1, le=1000)] | None = None
    timeout_seconds: Seconds | None = None
    owner: OwnerIn | None = Field(None, description="Its runs' owner (null: none).")
    labels: LabelsIn | None = Field(None, description="Replaces its runs' labels.")


class StartOut(BaseModel):
    slot_at: datetime
    run_id: int | None = Field(description="the slot's run; null when the slot was missed")
    outcome: str = Field(
        description="the run's state, or 'missed': a misfire policy let the slot go"
        " while no leader planned"
    )
    reason: str | None = Field(description="why a skipped slot was skipped")
    started_at: datetime | None = Field(description="null while waiting, or when skipped")
    delay_seconds: float | None = Field(description="slot to start: how late it started")

    @classmethod
    def of(cls, start: RecentStart) -> StartOut:
        return cls(
            slot_at=start.slot_at,
            run_id=start.run_id,
            outcome=start.outcome,
            reason=start.reason,
            started_at=start.started_at,
            delay_seconds=start.delay_seconds,
        )


class JobOut(BaseModel):
    id: int
    name: str
    namespace: str
    handler: str
    payload: JsonValue
    kind: TriggerKind
    schedule: str  # human text: "cron 0 2 * * * (Europe/Berlin)", "manual", ...
    cron: str | None
    interval_seconds: float | None
    at: datetime | None
    timezone: str
    misfire: MisfirePolicy
    overlap: OverlapPolicy
    catch_up_window_seconds: float
    run_all_cap: int
    jitter_seconds: float
    queue: str
    priority: int
    max_attempts: int
    timeout_seconds: float | None
    parameters: dict[str, Any] | None
    owner: str | None
    labels: dict[str, str]
    paused: bool
    next_fire_at: datetime | None
    created_at: datetime
    updated_at: datetime
    planning_error: str | None = Field(
        description="Why the planner could not plan this job the last time it tried; "
        "null when planning works. The job is retried at planning_retry_at, or at once "
        "when it is updated or resumed; other jobs are unaffected."
    )
    planning_failed_at: datetime | None
    planning_retry_at: datetime | None
    recent_starts: list[StartOut] = Field(
        default_factory=list,
        description="The newest slots (oldest first) and when their runs started; "
        "given by GET of one job.",
    )

    @classmethod
    def of(cls, job: Job, starts: Sequence[RecentStart] = ()) -> JobOut:
        spec = job.spec
        return cls(
            id=job.id,
            name=spec.name,
            namespace=spec.namespace,
            handler=spec.handler,
            payload=json.loads(spec.payload_json),
            kind=spec.kind,
            schedule=spec.schedule_text(job.created_at),
            cron=spec.cron,
            interval_seconds=spec.interval_seconds,
            at=spec.at,
            timezone=spec.timezone,
            misfire=spec.misfire,
            overlap=spec.overlap,
            catch_up_window_seconds=spec.catch_up_window_seconds,
            run_all_cap=spec.run_all_cap,
            jitter_seconds=spec.jitter_seconds,
            queue=spec.queue,
            priority=spec.priority,
            max_attempts=spec.max_attempts,
            timeout_seconds=spec.timeout,
            parameters=None if spec.parameters is None else dict(spec.parameters),
            owner=spec.owner,
            labels=dict(spec.labels),
            paused=job.paused,
            next_fire_at=job.next_fire_at,
            created_at=job.created_at,
            updated_at=job.updated_at,
            planning_error=job.planning_error,
            planning_failed_at=job.planning_failed_at,
            planning_retry_at=job.planning_retry_at,
            recent_starts=[StartOut.of(start) for start in starts],
        )


class JobList(BaseModel):
    items: list[JobOut]


class TriggerRequest(Request):
    """Run the job now; ``payload`` (if given) replaces the job's for this run."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"payload": {"rows": 10}}]}
    )

    payload: JsonValue = None
