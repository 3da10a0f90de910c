"""The queues' bodies (ADR 0035): a queue's depth, recent throughput and failure rate,
the workers serving it, whether it is paused, and its concurrency limit."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from rota.api.schemas.fields import Request
from rota.domain.queues import QueueSummary


class QueueDepth(BaseModel):
    pending: int
    retrying: int
    claimed: int
    running: int


class QueueOut(BaseModel):
    name: str
    depth: QueueDepth = Field(description="Unfinished runs by state.")
    dead_letters: int
    oldest_due_age_seconds: float | None = Field(
        description="How long the longest-waiting due run has waited (null: none is due)."
    )
    window_seconds: float = Field(
        description="The recent window throughput and failure rate are counted over."
    )
    finished: int = Field(description="Runs finished in the recent window.")
    throughput_per_minute: float
    failure_rate: float | None = Field(
        description="Failed, timed-out and dead-lettered runs of those finished in the "
        "window (null: none finished)."
    )
    workers: list[str] = Field(description="Node ids of the live workers serving the queue.")
    paused: bool = Field(description="Claims skip a paused queue, on every worker.")
    paused_at: datetime | None
    paused_by: str | None
    concurrency_limit: int | None = Field(
        description="At most this many of its runs at once, cluster-wide (null: no cap)."
    )

    @classmethod
    def of(cls, queue: QueueSummary) -> QueueOut:
        depth = {state.value: count for state, count in queue.depth.items()}
        return cls(
            name=queue.name,
            depth=QueueDepth(**depth),
            dead_letters=queue.dead_letters,
            oldest_due_age_seconds=queue.oldest_due_age,
            window_seconds=queue.window_seconds,
            finished=queue.finished,
            throughput_per_minute=round(queue.throughput_per_minute, 3),
            failure_rate=queue.failure_rate,
            workers=list(queue.workers),
            paused=queue.control.paused,
            paused_at=queue.control.paused_at,
            paused_by=queue.control.paused_by,
            concurrency_limit=queue.concurrency_limit,
        )


class QueueList(BaseModel):
    items: list[QueueOut]


class QueueLimitIn(Request):
    max_running: int | None = Field(
        description="At most this many runs of the queue at once, cluster-wide: a whole "
        "number >= 1, or null to remove the cap.",
        examples=[10],
    )
