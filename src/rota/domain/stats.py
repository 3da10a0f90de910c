"""What the cluster looks like, counted by the database: one read shared by the metrics
the leader publishes and the dashboard's overview, so both tell the same story."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

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


# The leader counts finished runs per minute (rota_finished_minutes) so that reading the
# last hour's counts does not group every run of the hour. A minute is counted once
# FINISHED_SETTLE has passed since it ended (a completion's finished_at can be behind
# its commit by that much), and the last FINISHED_RECOUNT is counted again each time, in
# case one was later still. Counted minutes are kept for FINISHED_KEEP.
# The charts' rollup (domain/charts.py) uses the same two. Every turn reads each run of
# the recounted minutes again, in one transaction whose snapshot holds back the queue
# table's cleanup: five minutes at 15-20k runs/s kept it from pruning for ~20 s of each
# minute and slowed the drain to half then (docs/benchmarks-by-hand.md, "what slowed
# the sustained run"). Turns a minute apart, the finished counts so count each minute
# twice (a run is counted if its transaction commits within two minutes of its
# finished_at), the charts' batches once (within one minute: chart_batch recounts only
# on a turn before the next minute settles).
FINISHED_SETTLE = timedelta(seconds=60)
FINISHED_RECOUNT = timedelta(minutes=1)
FINISHED_KEEP = timedelta(hours=2)
MINUTE = 60


@dataclass(frozen=True)
class Recount:
    """One recount: the minutes in [start, until) are counted again, those before
    ``keep_since`` forgotten; afterwards every minute in [counted_from, until) is
    counted."""

    start: datetime
    until: datetime
    keep_since: datetime
    counted_from: datetime


def minute_floor(at: datetime) -> datetime:
    return datetime.fromtimestamp(math.floor(at.timestamp() / MINUTE) * MINUTE, UTC)


def minute_ceil(at: datetime) -> datetime:
    return datetime.fromtimestamp(math.ceil(at.timestamp() / MINUTE) * MINUTE, UTC)


def recount(
    now: datetime, counted_from: datetime | None, counted_until: datetime | None
) -> Recount:
    """What the leader counts at ``now``, given what is counted already."""
    until = minute_floor(now - FINISHED_SETTLE)
    keep_since = until - FINISHED_KEEP
    if counted_from is None or counted_until is None or counted_until < keep_since:
        # The first count, or after a gap longer than what is kept: all that is kept.
        return Recount(keep_since, until, keep_since, keep_since)
    start = max(keep_since, min(counted_until, until) - FINISHED_RECOUNT)
    return Recount(start, until, keep_since, min(max(counted_from, keep_since), start))
