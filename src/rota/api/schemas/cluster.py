"""The cluster's bodies: workers, the leader, the handlers the server knows, cron
previews, and health."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from rota.domain.workers import WorkerInfo, WorkerState


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


class HealthOut(BaseModel):
    status: str
