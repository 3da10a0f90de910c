"""What the cluster looks like, counted by the database: one read shared by the metrics
the leader publishes and the dashboard's overview, so both tell the same story."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.domain.states import RunState


@dataclass(frozen=True)
class QueueCount:
    """How many runs of one namespace's queue are in ``state`` right now; for the states
    that wait (pending, retrying) also when the longest-waiting due run became due."""

    namespace: str
    queue: str
    state: RunState
    count: int
    oldest_due_at: datetime | None = None


@dataclass(frozen=True)
class FinishedCount:
    """How many runs of one namespace's queue finished in ``state`` in the bucket that
    starts at ``bucket_start`` (buckets are ``bucket_seconds`` long, aligned to the epoch)."""

    bucket_start: datetime
    namespace: str
    queue: str
    state: RunState
    count: int
