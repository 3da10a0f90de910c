"""Triggers: pure functions of time that say when a schedule fires next.

A trigger never reads the clock. ``next_after(t)`` answers the first fire instant
strictly after ``t`` (aware in, aware UTC out) or ``None`` when it never fires again, so
callers can step through fire times without ever seeing the same instant twice.
A schedule without a trigger is manual; that is handled by the planner, not here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from datetime import MAXYEAR, UTC, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from rota.domain.cron import CronExpression, parse_cron
from rota.domain.values import require_aware
from rota.domain.zoned import load_zone, next_fire
from rota.errors import InvalidArgument


class Trigger(Protocol):
    def next_after(self, after: datetime) -> datetime | None:
        """The first fire instant strictly after ``after``, in UTC; None = never again."""


@dataclass(frozen=True)
class CronTrigger:
    """Fires on a cron expression read in an IANA time zone (rules: ADR 0003)."""

    expression: str
    timezone: str = "UTC"
    _cron: CronExpression = field(init=False, repr=False, compare=False)
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Both are validated here so a bad schedule is refused when it is defined,
        # not the first time the planner asks it for a slot.
        object.__setattr__(self, "_cron", parse_cron(self.expression))
        object.__setattr__(self, "_zone", load_zone(self.timezone))

    @property
    def wall_clock(self) -> bool:
        """True if DST gaps and repeats fire once (see ADR 0003), False if interval-like."""
        return self._cron.wall_clock

    def next_after(self, after: datetime) -> datetime | None:
        return _next_cron_fire(self, _utc(after, "after"))


@functools.lru_cache(maxsize=4096)
def _next_cron_fire(trigger: CronTrigger, after: datetime) -> datetime | None:
    """Memoised: a pure function of (expression, zone, instant), and the planner asks it
    the same question for every job of a schedule shape at the same cursor (100,000
    per-minute jobs ask it 400,000 times a minute; issue 25, bench/schedule_scale.py)."""
    return next_fire(trigger._cron, trigger._zone, after)


@dataclass(frozen=True)
class IntervalTrigger:
    """Fires at ``anchor + k * every`` for k >= 0.

    Intervals are elapsed time: the arithmetic is in UTC, so DST never stretches or
    shrinks one.
    """

    every: timedelta | float
    anchor: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "every", _positive_interval(self.every))
        object.__setattr__(self, "anchor", require_aware(self.anchor, "anchor"))

    @property
    def interval(self) -> timedelta:
        # __post_init__ stored a timedelta; this only narrows the declared union.
        every = self.every
        return every if isinstance(every, timedelta) else timedelta(seconds=every)

    def next_after(self, after: datetime) -> datetime | None:
        after = _utc(after, "after")
        if after < self.anchor:
            return self.anchor
        elapsed_slots = (after - self.anchor) // self.interval
        try:
            return self.anchor + (elapsed_slots + 1) * self.interval
        except OverflowError:
            return None  # past year 9999: nothing left to fire


def _positive_interval(every: object) -> timedelta:
    allowed = "a timedelta or a finite number of seconds > 0 (at least 1 microsecond)"
    if isinstance(every, timedelta):
        interval = every
    elif isinstance(every, int | float) and not isinstance(every, bool):
        if not math.isfinite(every):
            raise InvalidArgument("interval", every, allowed)
        try:
            interval = timedelta(seconds=every)
        except OverflowError:
            raise InvalidArgument("interval", every, allowed) from None
    else:
        raise InvalidArgument("interval", every, allowed)
    if interval <= timedelta(0):
        raise InvalidArgument("interval", every, allowed)
    return interval


@dataclass(frozen=True)
class OnceTrigger:
    """Fires exactly once, at ``at``."""

    at: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "at", require_aware(self.at, "at"))

    def next_after(self, after: datetime) -> datetime | None:
        return self.at if self.at > _utc(after, "after") else None


def fire_times(trigger: Trigger, after: datetime, until: datetime, limit: int) -> list[datetime]:
    """Fire instants in (after, until], ascending, at most ``limit`` of them."""
    after = _utc(after, "after")
    until = _utc(until, "until")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgument("limit", limit, "an int >= 1")
    times: list[datetime] = []
    instant = trigger.next_after(after)
    while instant is not None and instant <= until and len(times) < limit:
        times.append(instant)
        instant = trigger.next_after(instant)
    return times


def _utc(value: datetime, name: str) -> datetime:
    """``value`` in UTC (naive refused). ``datetime.max`` or ``min`` written in a zone has
    no UTC equivalent; it still means "no bound", so it is clamped, not an OverflowError."""
    try:
        return require_aware(value, name)
    except OverflowError:
        edge = datetime.max if value.year == MAXYEAR else datetime.min
        return edge.replace(tzinfo=UTC)


def describe(trigger: Trigger) -> str:
    """Short human text for logs, the CLI and the dashboard."""
    match trigger:
        case CronTrigger(expression=expression, timezone=zone):
            return f"cron {expression!r} in {zone}"
        case IntervalTrigger(anchor=anchor):
            return f"every {_duration(trigger.interval)} from {anchor.astimezone(UTC).isoformat()}"
        case OnceTrigger(at=at):
            return f"once at {at.astimezone(UTC).isoformat()}"
        case _:
            return repr(trigger)


def _duration(interval: timedelta) -> str:
    """'1d 2h 30m', '15m', '0.25s': the largest units first, no zero parts."""
    micros = interval // timedelta(microseconds=1)
    seconds, fraction = divmod(micros, 1_000_000)
    parts = []
    for suffix, size in (("d", 86400), ("h", 3600), ("m", 60)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{suffix}")
    if fraction:
        parts.append(f"{seconds}.{fraction:06d}".rstrip("0") + "s")
    elif seconds:
        parts.append(f"{seconds}s")
    return " ".join(parts)
