"""A run's bodies: enqueue (and the run a start made), the run and its attempts, its
log lines, requeue and dead-letter replay."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rota.api.schemas.fields import (
    MAX_ID,
    Instant,
    LabelsIn,
    Name,
    OwnerIn,
    Priority,
    Request,
    Seconds,
)
from rota.domain.runs import Attempt, LogLine, Run
from rota.domain.states import AttemptOutcome, RunState


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
                {"handler": "export", "owner": "billing", "labels": {"customer": "acme"}},
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
    owner: OwnerIn | None = None
    labels: LabelsIn | None = None


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
    owner: str | None
    labels: dict[str, str]
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
            owner=run.owner,
            labels=dict(run.labels),
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
