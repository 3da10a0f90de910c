"""What the API reads and writes, as pydantic models (and so as OpenAPI schemas).

Requests forbid unknown fields (a typo is a 422, not a silently ignored option); enums
travel as their string values; instants are ISO 8601 with a UTC offset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from fastapi import Header
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
)

from rota.domain.access import ApiKey, AuditEntry, Role, Scope
from rota.domain.jobs import Job, RecentStart, TriggerKind
from rota.domain.misfire import MisfirePolicy, OverlapPolicy
from rota.domain.runs import NAME_PATTERN, Attempt, LogLine, Run
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.values import INSTANT_RULE, in_instant_range
from rota.domain.values import MAX_ID as MAX_ID
from rota.domain.workers import WorkerInfo, WorkerState

Name = Annotated[str, Field(pattern=NAME_PATTERN.pattern, examples=["nightly-report"])]
Priority = Annotated[int, Field(ge=1, le=10)]
Seconds = Annotated[float, Field(gt=0, le=10 * 365 * 24 * 3600)]


def _iso_instant(value: Any) -> Any:
    """Instants are ISO 8601 text only: pydantic would also take a number as a unix
    timestamp, which the schema (format: date-time) does not promise."""
    if not isinstance(value, str | datetime) or (
        isinstance(value, str) and not re.match(r"^\d{4}-\d{2}-\d{2}", value)
    ):
        raise ValueError("expected an ISO 8601 instant with a UTC offset")
    return value


def _in_range(value: datetime) -> datetime:
    """The library's instant range (see rota.domain.values), as a field error."""
    if not in_instant_range(value):
        raise ValueError(f"expected {INSTANT_RULE}")
    return value


Instant = Annotated[AwareDatetime, BeforeValidator(_iso_instant), AfterValidator(_in_range)]
# The header that makes a start safe to retry (a trigger, an enqueue, a workflow start).
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Retrying with the same key returns what the first request made.",
    ),
]


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- jobs -----------------------------------------------------------------------------
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


class StartOut(BaseModel):
    slot_at: datetime
    started_at: datetime | None = Field(description="null while waiting, or when skipped")
    delay_seconds: float | None = Field(description="slot to start: how late it started")

    @classmethod
    def of(cls, start: RecentStart) -> StartOut:
        return cls(
            slot_at=start.slot_at, started_at=start.started_at, delay_seconds=start.delay_seconds
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


class RunCreated(BaseModel):
    """The run a trigger or an enqueue made (or, for a repeated ``Idempotency-Key``, the
    run the first request made)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"run_id": 4211}]})

    run_id: int


class EnqueueRequest(Request):
    """One run of a handler the server knows; fields left out take the handler's
    defaults."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"handler": "export", "payload": {"account": 42}, "queue": "exports"},
                {"handler": "report", "run_at": "2030-01-01T09:00:00+01:00", "priority": 2},
            ]
        },
    )

    handler: Name
    payload: JsonValue = None
    run_at: Instant | None = Field(None, description="Not before then (default: now).")
    priority: Priority | None = Field(None, description="1 (most urgent) to 10.")
    queue: Name | None = None
    max_attempts: Annotated[int, Field(ge=1, le=1000)] | None = None
    timeout_seconds: Seconds | None = None
    tags: list[Name] | None = Field(None, max_length=50, description="Added to the handler's.")
    concurrency_key: Name | None = None
    key_limit: Annotated[int, Field(ge=1, le=10_000)] | None = None
    deadline: Instant | None = Field(None, description="Start by then or be cancelled.")
    rate_key: Name | None = Field(None, description="Its rates count each key apart.")
    breaker_key: Name | None = Field(None, description="Its breaker trips per key.")


# -- runs -----------------------------------------------------------------------------
class RunOut(BaseModel):
    id: int
    namespace: str
    handler: str
    queue: str
    state: RunState
    payload: JsonValue
    priority: int
    run_at: datetime
    attempt: int
    max_attempts: int
    fence: int
    timeout_seconds: float | None
    worker_id: str | None
    lease_expires_at: datetime | None
    idempotency_key: str | None
    result: JsonValue
    error: str | None
    cancel_requested: bool
    lost_count: int
    replay_of: int | None
    job_id: int | None
    slot_at: datetime | None
    tags: list[str]
    correlation_id: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None

    @classmethod
    def of(cls, run: Run) -> RunOut:
        duration = None
        if run.started_at is not None and run.finished_at is not None:
            duration = (run.finished_at - run.started_at).total_seconds()
        return cls(
            id=run.id,
            namespace=run.namespace,
            handler=run.handler,
            queue=run.queue,
            state=run.state,
            payload=run.payload,
            priority=run.priority,
            run_at=run.run_at,
            attempt=run.attempt,
            max_attempts=run.max_attempts,
            fence=run.fence,
            timeout_seconds=run.timeout,
            worker_id=run.worker_id,
            lease_expires_at=run.lease_expires_at,
            idempotency_key=run.idempotency_key,
            result=run.result,
            error=run.error,
            cancel_requested=run.cancel_requested,
            lost_count=run.lost_count,
            replay_of=run.replay_of,
            job_id=run.job_id,
            slot_at=run.slot_at,
            tags=list(run.tags),
            correlation_id=run.correlation_id,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            duration_seconds=duration,
        )


class RunPage(BaseModel):
    items: list[RunOut]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next (older) page; null on the last page."
    )


class AttemptOut(BaseModel):
    attempt: int
    fence: int
    worker_id: str | None
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None
    outcome: AttemptOutcome
    error: str | None

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptOut:
        return cls(
            attempt=attempt.attempt,
            fence=attempt.fence,
            worker_id=attempt.worker_id,
            started_at=attempt.started_at,
            finished_at=attempt.finished_at,
            duration_seconds=attempt.duration,
            outcome=attempt.outcome,
            error=attempt.error,
        )


class RunDetailOut(BaseModel):
    run: RunOut
    attempts: list[AttemptOut]


class LogLineOut(BaseModel):
    seq: int  # the line's place in the run's log: ask for lines ``after`` it
    attempt: int
    at: datetime
    level: str
    message: str
    fields: dict[str, JsonValue]

    @classmethod
    def of(cls, line: LogLine) -> LogLineOut:
        try:
            fields = json.loads(line.fields_json)
        except ValueError:
            fields = {}
        return cls(
            seq=line.seq or 0,
            attempt=line.attempt,
            at=line.at,
            level=line.level,
            message=line.message,
            fields=fields if isinstance(fields, dict) else {},
        )


class RunLogs(BaseModel):
    run_id: int
    lines: list[LogLineOut]


class Requeued(BaseModel):
    run_id: int
    new_run_id: int


class ReplayMany(Request):
    run_ids: Annotated[
        list[Annotated[int, Field(ge=1, le=MAX_ID)]], Field(min_length=1, max_length=100)
    ]


class ReplayResultOut(BaseModel):
    run_id: int
    new_run_id: int | None
    error: str | None


class ReplayManyOut(BaseModel):
    results: list[ReplayResultOut]


# -- cluster --------------------------------------------------------------------------
class WorkerOut(BaseModel):
    node_id: str
    host: str
    pid: int
    version: str
    queues: list[str]
    tags: list[str]
    concurrency: int
    state: WorkerState
    started_at: datetime | None
    heartbeat_at: datetime | None
    heartbeat_age_seconds: float | None

    @classmethod
    def of(cls, worker: WorkerInfo, now: datetime) -> WorkerOut:
        return cls(
            node_id=worker.node_id,
            host=worker.host,
            pid=worker.pid,
            version=worker.version,
            queues=list(worker.queues),
            tags=list(worker.tags),
            concurrency=worker.concurrency,
            state=worker.state,
            started_at=worker.started_at,
            heartbeat_at=worker.heartbeat_at,
            heartbeat_age_seconds=worker.heartbeat_age(now),
        )


class WorkerList(BaseModel):
    items: list[WorkerOut]


class LeaderOut(BaseModel):
    holder: str
    term: int = Field(description="Grows with every change of leader: its fencing token.")
    since: datetime
    expires_at: datetime


class LeaderState(BaseModel):
    leader: LeaderOut | None


class HandlerOut(BaseModel):
    name: str
    queue: str
    max_attempts: int
    timeout_seconds: float | None
    priority: int
    payload_schema: dict[str, Any] = Field(
        description="JSON Schema of the payload, from the handler's type hint ({} = any)."
    )


class HandlerList(BaseModel):
    items: list[HandlerOut]


class CronInstant(BaseModel):
    utc: datetime
    local: datetime


class CronPreview(BaseModel):
    expression: str
    timezone: str
    instants: list[CronInstant]


# -- access ---------------------------------------------------------------------------
class ApiKeyCreate(Request):
    name: Name
    scopes: Annotated[list[Scope], Field(min_length=1)]
    namespaces: Annotated[list[str], Field(min_length=1, max_length=100)] = Field(
        description='Namespaces the key reaches, or ["*"] for all.'
    )


class ApiKeyOut(BaseModel):
    key_id: str
    name: str
    scopes: list[str]
    namespaces: list[str]
    created_by: str
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyOut:
        return cls(
            key_id=key.key_id,
            name=key.name,
            scopes=list(key.scopes),
            namespaces=list(key.namespaces),
            created_by=key.created_by,
            created_at=key.created_at,
            revoked_at=key.revoked_at,
        )


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(description="The key itself. Shown only now: store it safely.")


class ApiKeyList(BaseModel):
    items: list[ApiKeyOut]


class AuditOut(BaseModel):
    id: int
    at: datetime
    actor: str
    action: str
    target: str
    namespace: str | None
    status: int
    outcome: str
    correlation_id: str | None
    detail: str | None

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditOut:
        # The entry's fields are the response's, one for one.
        return cls.model_validate(entry, from_attributes=True)


class AuditPage(BaseModel):
    items: list[AuditOut]
    next_cursor: str | None


class DevTokenRequest(Request):
    subject: Name = "dev"
    role: Role | None = Role.ADMIN
    scopes: list[Scope] = Field(default_factory=list)
    namespaces: Annotated[list[str], Field(min_length=1, max_length=100)] = Field(
        default_factory=lambda: ["*"]
    )
    ttl_seconds: Annotated[int, Field(ge=60, le=24 * 3600)] = 3600


class TokenOut(BaseModel):
    access_token: str
    token_type: str = "bearer"  # noqa: S105 - the OAuth 2 token type name, not a secret
    expires_in: int
    scopes: list[str]
    namespaces: list[str]


class HealthOut(BaseModel):
    status: str
