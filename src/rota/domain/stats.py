"""What the cluster looks like, counted by the database: one read shared by the metrics
the leader publishes and the dashboard's overview, so both tell the same story."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

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


# Finished runs are counted per minute by the leader into the charts' rollup
# (rota_chart_minutes, domain/charts.py): one read of each finished run serves the
# charts and the finished counts of the overview and the queues.
MINUTE = 60


def minute_floor(at: datetime) -> datetime:
    return datetime.fromtimestamp(math.floor(at.timestamp() / MINUTE) * MINUTE, UTC)


def minute_ceil(at: datetime) -> datetime:
    return datetime.fromtimestamp(math.ceil(at.timestamp() / MINUTE) * MINUTE, UTC)
