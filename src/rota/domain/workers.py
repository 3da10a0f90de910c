"""The worker registry's values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class WorkerState(StrEnum):
    ACTIVE = "active"  # claiming
    DRAINING = "draining"  # finishing what it holds, claiming nothing new
    DEAD = "dead"  # heartbeats stopped; its runs were taken back


@dataclass(frozen=True)
class WorkerInfo:
    node_id: str
    host: str
    pid: int
    version: str
    queues: tuple[str, ...]
    tags: tuple[str, ...]
    concurrency: int
    state: WorkerState = WorkerState.ACTIVE
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None

    def heartbeat_age(self, now: datetime) -> float | None:
        return None if self.heartbeat_at is None else (now - self.heartbeat_at).total_seconds()


@dataclass(frozen=True)
class UnclaimableRun:
    """A due run whose required tags no live worker serving its queue has."""

    run_id: int
    queue: str
    tags: tuple[str, ...]
