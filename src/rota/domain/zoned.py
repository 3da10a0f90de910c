"""Cron in an IANA time zone: where the DST rules of ADR 0003 live.

``cron.py`` reads the expression and matches naive local readings; this module walks a
zone's timeline to turn readings into instants: a wall-clock time in a spring-forward
gap fires once as the gap ends, one in a fall-back repeat fires once (first pass), and
interval-like entries fire at every real instant whose reading matches.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rota.domain.cron import SEARCH_YEARS, CronExpression
from rota.errors import InvalidArgument

# No tz database has two offset changes less than ~7 days apart (checked against
# tzdata 2026f), so probing once a day cannot step over a change and its reversal.
_PROBE_STEP = timedelta(days=1)
_ONE_SECOND = timedelta(seconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Searches start no earlier than this: a day's margin keeps local readings (offsets are
# under 24 h) inside datetime's range.
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)


class UnknownTimeZone(InvalidArgument):
    def __init__(self, name: object) -> None:
        super().__init__(
            "time zone", name, "an IANA time zone name such as 'UTC' or 'Europe/Berlin'"
        )


def load_zone(name: str) -> ZoneInfo:
    """The IANA zone called ``name``, or :class:`UnknownTimeZone`."""
    if not isinstance(name, str) or not name:
        raise UnknownTimeZone(name)
    try:
        return ZoneInfo(name)
    # zoneinfo reports a malformed key as ValueError and a directory ("America") as OSError.
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimeZone(name) from None


def next_fire(cron: CronExpression, zone: ZoneInfo, after: datetime) -> datetime | None:
    """The first fire instant strictly after ``after`` (aware), in UTC; None if none is
    found within :data:`SEARCH_YEARS`.

    The zone's timeline is walked as segments of constant UTC offset. Inside a segment
    local readings map to instants one to one; at an offset change the search restarts
    from the reading the change lands on, which is where the DST rules live.
    """
    start = max(after.astimezone(UTC), _EARLIEST)
    local = start.astimezone(zone)
    offset = _offset(local)
    floor, inclusive = local.replace(tzinfo=None), False
    segment_start: datetime | None = None
    if cron.wall_clock and local.fold == 1:
        # Second pass of a repeated hour: its readings already fired in the first pass.
        first_pass_offset = _offset(local.replace(fold=0))
        segment_start = _first_offset_change(
            zone, start - (first_pass_offset - offset), start, first_pass_offset
        )
        if segment_start is not None:
            floor, inclusive = _naive(segment_start + first_pass_offset), True
    before = _add_years(floor.date(), SEARCH_YEARS)
    # Each pass ends in a return or moves to a later offset change; a century holds a few
    # hundred changes even in zones that change four times a year.
    for _ in range(SEARCH_YEARS * 12):
        reading = cron.next_reading(floor, inclusive=inclusive, before=before)
        if reading is None:
            return None
        candidate = reading.replace(tzinfo=UTC) - offset
        if segment_start is not None and candidate < segment_start:
            candidate = segment_start  # a wall-clock time inside the gap fires as it ends
        change = _first_offset_change(zone, start, candidate, offset)
        if change is None:
            return candidate
        previous_offset, offset = offset, _offset(change.astimezone(zone))
        start = segment_start = change
        # Wall-clock entries resume where the old offset left the clock, so repeated
        # readings are not fired again and skipped ones collapse onto `change`;
        # interval-like entries resume at the reading the new offset shows.
        resume_offset = previous_offset if cron.wall_clock else offset
        floor, inclusive = _naive(change + resume_offset), True
    return None


def _add_years(day: date, years: int) -> date:
    try:
        return day + timedelta(days=366 * years)
    except OverflowError:
        return date.max


def _offset(local: datetime) -> timedelta:
    offset = local.utcoffset()
    if offset is None:  # pragma: no cover - ZoneInfo always answers
        raise ValueError("time zone gave no UTC offset")
    return offset


def _naive(instant_plus_offset: datetime) -> datetime:
    return instant_plus_offset.replace(tzinfo=None)


def _first_offset_change(
    zone: ZoneInfo, start: datetime, end: datetime, offset: timedelta
) -> datetime | None:
    """The first instant in (start, end] whose UTC offset is not ``offset``, if any."""
    lower = start
    while lower < end:
        upper = min(lower + _PROBE_STEP, end)
        if _offset(upper.astimezone(zone)) != offset:
            return _bisect_offset_change(zone, lower, upper, offset)
        lower = upper
    return None


def _bisect_offset_change(
    zone: ZoneInfo, lower: datetime, upper: datetime, offset: timedelta
) -> datetime:
    # tz databases put every change on a whole second, so whole seconds are enough.
    low = (lower - _EPOCH) // _ONE_SECOND
    high = -((_EPOCH - upper) // _ONE_SECOND)
    while high - low > 1:
        middle = (low + high) // 2
        if _offset(datetime.fromtimestamp(middle, zone)) == offset:
            low = middle
        else:
            high = middle
    return _EPOCH + high * _ONE_SECOND
