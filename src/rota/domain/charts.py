"""The charts' rollup (issue 29, "charts where people look"): pure rules. Which minutes
the leader counts next, which rollup and which bars a range reads, and pickup-delay
quantiles estimated from fixed buckets. No I/O, no clock: ``now`` comes in.

The leader counts finished runs per minute, namespace, queue and handler, one row with
a count per final state in columns (rota_chart_minutes, migration 0028), and sums those
minutes per quarter-hour (rota_chart_quarters), both kept CHART_MINUTES_KEEP, and per
hour (rota_chart_hours, kept CHART_HOURS_KEEP). The 1 h chart reads minutes, the 24 h
chart quarter-hours, the 7 d chart hours: a read sums as many rows whatever the range,
one a bar and key, and none of history."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from rota.domain.states import RunState
from rota.domain.stats import minute_floor

# A minute is counted once CHART_SETTLE has passed since it ended (a completion's
# finished_at can be behind its commit by that much), and a turn before the next minute
# settles counts the last CHART_RECOUNT again, in case one was later still. Each turn
# reads each run of the minutes it counts in one transaction, whose snapshot holds back
# the queue table's cleanup: five minutes recounted at 15-20k runs/s kept it from pruning
# for ~20 s of each minute and slowed the drain to half then; two rollups reading the
# same minute each slowed it for a few seconds (docs/benchmarks-by-hand.md, "what slowed
# the sustained run" and "one read of each finished run"). So one rollup, one minute.
CHART_SETTLE = timedelta(seconds=60)
CHART_RECOUNT = timedelta(minutes=1)
CHART_BATCH = timedelta(hours=1)  # the most one transaction counts (bounded catch-up)
# A first count of 8 days is caught up in one turn of the duty, an hour a transaction
# (the writer is let go between batches); later turns need one batch.
CHART_BATCHES_PER_TURN = 8 * 24 + 8
CHART_MINUTES_KEEP = timedelta(hours=25)
CHART_HOURS_KEEP = timedelta(days=8)
HOUR = 3600

# Pickup delay (started_at - run_at) is counted into buckets with these upper bounds in
# seconds, plus one open bucket above the last: enough to say p50 and p99 to within a
# bucket. The columns are named after them (waited_100ms ... waited_more).
DELAY_BOUNDS: tuple[float, ...] = (0.1, 1.0, 10.0, 60.0, 600.0)
DELAY_BUCKETS = len(DELAY_BOUNDS) + 1
FAILURE_STATES = frozenset(
    {RunState.FAILED, RunState.TIMED_OUT, RunState.DEAD_LETTERED, RunState.CANCELLED}
)


class ChartRange(StrEnum):
    HOUR = "1h"
    DAY = "24h"
    WEEK = "7d"

    @property
    def span(self) -> timedelta:
        return {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}[
            self.value
        ]

    @property
    def bucket_seconds(self) -> int:
        """One bar: 60 bars a chart for 1 h, 96 for 24 h, 168 for 7 d."""
        return {"1h": 60, "24h": 900, "7d": HOUR}[self.value]

    @property
    def rollup(self) -> str:
        """Which rollup the chart reads: minutes, quarter-hours or hours, so that one
        row of a key is one bar (a read sums at most 168 rows a key)."""
        return {"1h": "minutes", "24h": "quarters", "7d": "hours"}[self.value]


class ChartBy(StrEnum):
    QUEUE = "queue"
    HANDLER = "handler"


def _floor(at: datetime, seconds: int) -> datetime:
    return datetime.fromtimestamp(math.floor(at.timestamp() / seconds) * seconds, UTC)


def _ceil(at: datetime, seconds: int) -> datetime:
    return datetime.fromtimestamp(math.ceil(at.timestamp() / seconds) * seconds, UTC)


@dataclass(frozen=True)
class ChartBatch:
    """One transaction of the leader's count: the minutes in [start, until) are counted
    again from history, the hours and quarter-hours in [hour_start, hour_until) summed
    again from the minutes; minutes and quarter-hours before ``minutes_keep_since`` and
    hours before ``hours_keep_since`` are dropped. ``caught_up``: ``until`` is as far
    as may be counted at ``now``."""

    start: datetime
    until: datetime
    hour_start: datetime
    hour_until: datetime
    minutes_keep_since: datetime
    hours_keep_since: datetime
    caught_up: bool
    counted_from: datetime


def chart_batch(
    now: datetime, counted_until: datetime | None, counted_from: datetime | None = None
) -> ChartBatch:
    """What the leader counts next at ``now``, given what is counted already: every
    minute in [counted_from, counted_until) (``counted_from`` None: not known, as on a
    database counted before schema version 33). After the batch every minute in
    [batch.counted_from, batch.until) is counted and kept.

    Every batch recounts whole minutes and whole hours (delete, then insert the sums),
    so a batch run twice writes the same rows, and a batch that died before its commit
    left nothing: a run is counted once, never twice and never not at all."""
    settled = minute_floor(now - CHART_SETTLE)
    hours_keep_since = _floor(settled - CHART_HOURS_KEEP, HOUR)
    if counted_until is None or counted_until < hours_keep_since:
        start = hours_keep_since  # the first count, or after a gap longer than kept
        counted_from = None
    else:
        # Catching up, from where the last batch ended; caught up, the last minutes
        # again (a run may finish after its minute was counted, by CHART_SETTLE at most).
        start = max(hours_keep_since, min(counted_until, settled - CHART_RECOUNT))
    until = min(settled, start + CHART_BATCH)
    hour_start = _floor(start, HOUR)
    # The minutes an hour is summed from stay until it is summed for the last time.
    minutes_keep_since = min(settled - CHART_MINUTES_KEEP, hour_start)
    # Counted minutes run unbroken from where counting started (each batch starts at
    # or before where the last ended), less those dropped.
    covered_from = start if counted_from is None else counted_from
    return ChartBatch(
        start=start,
        until=until,
        hour_start=hour_start,
        hour_until=_ceil(until, HOUR),
        minutes_keep_since=minutes_keep_since,
        hours_keep_since=hours_keep_since,
        caught_up=until >= settled,
        counted_from=max(covered_from, minutes_keep_since),
    )


@dataclass(frozen=True)
class ChartWindow:
    """The bars a chart reads: ``bars`` of ``bucket_seconds`` from ``since``; the rollup
    holds runs that finished before ``until`` (the last bar may be partly counted)."""

    since: datetime
    until: datetime
    bucket_seconds: int
    bars: int


def chart_window(chart_range: ChartRange, counted_until: datetime) -> ChartWindow:
    bucket = chart_range.bucket_seconds
    bars = int(chart_range.span.total_seconds()) // bucket
    last = _floor(counted_until - timedelta(microseconds=1), bucket)
    since = last - timedelta(seconds=bucket * (bars - 1))
    return ChartWindow(since=since, until=counted_until, bucket_seconds=bucket, bars=bars)


CHART_TOP = 10  # series drawn apart by default; every other key is summed into one
CHART_TOP_MAX = 100


@dataclass(frozen=True)
class ChartAsk:
    """What a chart reads: ``range`` per ``by``, of the ``namespaces`` the caller
    reaches (None: every one). The ``top`` keys by runs finished come apart, every
    other key summed into one series (``top=0``: everything summed, the page's "every
    queue"); ``only`` (namespace, key) sums that key alone instead of the others."""

    chart_range: ChartRange
    by: ChartBy
    namespaces: frozenset[str] | None = None
    top: int = CHART_TOP
    only: tuple[str, str] | None = None


@dataclass(frozen=True)
class ChartKey:
    """A namespace's queue (or handler) and the runs of it that finished in the window."""

    namespace: str
    key: str
    finished: int
    failures: int


@dataclass(frozen=True)
class ChartSeries:
    """One chart line, a plain list per measure with one value a bar (zero when nothing
    finished): runs finished, succeeded, ended in one of FAILURE_STATES; of those that
    started, the sum of their pickup delays and how many fell in each DELAY_BOUNDS
    bucket. ``namespace`` and ``key`` are "" for the sum of other keys."""

    namespace: str
    key: str
    finished: list[int]
    succeeded: list[int]
    failures: list[int]
    delay_sum: list[float]
    delay_buckets: list[tuple[int, ...]]

    @property
    def started(self) -> list[int]:
        return [sum(b) for b in self.delay_buckets]

    @property
    def delay_mean(self) -> list[float | None]:
        return [s / n if n else None for s, n in zip(self.delay_sum, self.started, strict=True)]

    @property
    def delay_p50(self) -> list[float | None]:
        return [delay_quantile(b, 0.5) for b in self.delay_buckets]

    @property
    def delay_p99(self) -> list[float | None]:
        return [delay_quantile(b, 0.99) for b in self.delay_buckets]


@dataclass(frozen=True)
class ChartRead:
    """A chart's answer: every key the caller reaches, most runs finished first; the
    series of the top ones in that order; and ``rest``, every other key summed (or the
    one key asked for)."""

    window: ChartWindow
    keys: list[ChartKey]
    series: list[ChartSeries]
    rest: ChartSeries


def delay_quantile(buckets: tuple[int, ...], q: float) -> float | None:
    """The upper bound of the bucket holding the ``q`` quantile (an estimate no lower
    than the truth); the open top bucket answers with the last bound, read "at least".
    None when nothing started."""
    total = sum(buckets)
    if not total:
        return None
    wanted = q * total
    seen = 0
    for bound, n in zip((*DELAY_BOUNDS, DELAY_BOUNDS[-1]), buckets, strict=True):
        seen += n
        if seen >= wanted:
            return bound
    return DELAY_BOUNDS[-1]


# One bar of a series as the store reads it: (bar index, series: a key's rank or 0 for
# the rest, finished, succeeded, failures, delay sum, the delay buckets).
ChartBar = tuple[int, int, int, int, int, float, tuple[int, ...]]
_NO_DELAYS = (0,) * DELAY_BUCKETS


def _empty(namespace: str, key: str, bars: int) -> ChartSeries:
    return ChartSeries(
        namespace, key, [0] * bars, [0] * bars, [0] * bars, [0.0] * bars, [_NO_DELAYS] * bars
    )


def chart_read(
    window: ChartWindow, keys: list[ChartKey], bars: Iterable[ChartBar], top: int
) -> ChartRead:
    """The series from the store's sums, one value a bar (a bar outside the window, a
    rollup row newer than its cursor, is left out). ``keys`` is in rank order: the
    series of rank r is keys[r - 1]."""
    apart = [_empty(k.namespace, k.key, window.bars) for k in keys[:top]]
    rest = _empty("", "", window.bars)
    for bar, rank, finished, succeeded, failures, delay_sum, delays in bars:
        if not 0 <= bar < window.bars:
            continue
        one = apart[rank - 1] if 0 < rank <= len(apart) else rest
        one.finished[bar] = finished
        one.succeeded[bar] = succeeded
        one.failures[bar] = failures
        one.delay_sum[bar] = delay_sum
        one.delay_buckets[bar] = delays
    return ChartRead(window, keys, apart, rest)
