"""Cron expressions: parsing, validation and matching local readings (``cron_fields.py``
reads each field; ``zoned.py`` turns readings into instants in an IANA time zone).

The dialect and the DST rules are decided in docs/adr/0003-cron-and-dst-rules.md. In short:

* 5 fields (minute hour day-of-month month day-of-week) or 6 with the SECOND FIRST;
  ``@hourly @daily @midnight @weekly @monthly @yearly @annually``;
  ``L LW nW`` in day-of-month, ``n#k nL`` in day-of-week; day-of-month and day-of-week
  are ORed when both are restricted and ANDed when either starts with ``*`` (Vixie).
* An entry is *wall-clock* when its hour, minute and (6 fields) second fields all start
  with something other than ``*``; every other entry is *interval-like* (Vixie cron's
  own split). A wall-clock time that a spring-forward gap skips fires once, at the
  instant the gap ends; one that a fall-back repeats fires once, at its first
  occurrence. Interval-like entries fire at every real instant whose local time
  matches: both passes of a repeated hour, nothing inside a gap.

The calendar is matched on naive local readings here rather than through croniter: the
ADR lists the croniter gaps (``#`` with day-of-month, no ``LW``/``nL``, lossy ``W``)
that made wrapping it more code than this module. Every search is bounded.
"""

from __future__ import annotations

import calendar
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache

from rota.domain.cron_fields import (
    ALIASES,
    FIELD_COUNT_HELP,
    HOUR,
    MINUTE,
    MONTH,
    SECOND,
    MonthDays,
    WeekDays,
    parse_day_of_month,
    parse_day_of_week,
    parse_time_field,
)
from rota.domain.cron_fields import MONTH_NAMES as MONTH_NAMES
from rota.domain.cron_fields import WEEKDAY_NAMES as WEEKDAY_NAMES
from rota.domain.cron_fields import InvalidCronExpression as InvalidCronExpression
from rota.errors import InvalidArgument

# A satisfiable calendar pattern recurs within ~40 years (February 29 on a given
# weekday is the rarest); searching a century is bounded and never gives up too early.
SEARCH_YEARS = 100
_LAST_SEARCHABLE_YEAR = 9998  # keeps `reading - offset` and probes inside datetime's range
_ONE_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class DayRule:
    """Which calendar days match. ``either_suffices`` is the Vixie rule: when both day
    fields are restricted (neither starts with ``*``), a day matching either one fires."""

    month_days: MonthDays
    week_days: WeekDays
    either_suffices: bool

    def matches(self, day: int, weekday: int, month_length: int) -> bool:
        by_month_day = self.month_days.matches(day, weekday, month_length)
        by_weekday = self.week_days.matches(day, weekday, month_length)
        if self.either_suffices:
            return by_month_day or by_weekday
        return by_month_day and by_weekday


def _days_by_month_shape(rule: DayRule) -> tuple[tuple[int, ...], ...]:
    """Matching days for every month shape (see :func:`_shape`).

    Every day token depends only on a month's length and the weekday of its 1st, so 28
    small tables replace day-by-day evaluation; they also decide whether the expression
    can ever fire.
    """
    return tuple(
        tuple(
            day
            for day in range(1, length + 1)
            if rule.matches(day, (first_weekday + day - 1) % 7, length)
        )
        for length in (28, 29, 30, 31)
        for first_weekday in range(7)
    )


def _shape(month_length: int, first_weekday: int) -> int:
    """Index of a month shape: its length (28-31) and the cron weekday of its 1st."""
    return (month_length - 28) * 7 + first_weekday


def _possible_lengths(month: int) -> tuple[int, ...]:
    if month == 2:
        return (28, 29)
    return (30,) if month in (4, 6, 9, 11) else (31,)


@dataclass(frozen=True)
class CronExpression:
    """A parsed, validated cron expression. Build it with :func:`parse_cron`."""

    text: str
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: frozenset[int]
    days: DayRule
    wall_clock: bool
    # Derived from `days`, so left out of equality and repr.
    days_by_shape: tuple[tuple[int, ...], ...] = field(compare=False, repr=False)

    def matching_days(self, year: int, month: int) -> tuple[int, ...]:
        first_weekday, length = calendar.monthrange(year, month)
        # calendar counts Monday as 0; cron counts Sunday as 0.
        return self.days_by_shape[_shape(length, (first_weekday + 1) % 7)]

    def next_reading(self, floor: datetime, *, inclusive: bool, before: date) -> datetime | None:
        """The first matching naive local time at/after ``floor`` and before ``before``."""
        start = floor.replace(microsecond=0)
        if floor.microsecond or not inclusive:
            start += _ONE_SECOND
        year, month, first_day = start.year, start.month, start.day
        clock: tuple[int, int, int] | None = (start.hour, start.minute, start.second)
        end = min(before, date(_LAST_SEARCHABLE_YEAR, 12, 31))
        while date(year, month, 1) < end:
            if month in self.months:
                days = self.matching_days(year, month)
                for day in days[bisect_left(days, first_day) :]:
                    found = self._clock_at_or_after(clock if day == first_day else None)
                    if found is not None:
                        reading = datetime(year, month, day, *found)
                        return reading if reading.date() < end else None
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
            first_day, clock = 1, None
        return None

    def _first_clock(self) -> tuple[int, int, int]:
        return (self.hours[0], self.minutes[0], self.seconds[0])

    def _clock_at_or_after(self, clock: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        if clock is None:
            return self._first_clock()
        hour, minute, second = clock
        hour_at = bisect_left(self.hours, hour)
        if hour_at == len(self.hours):
            return None
        if self.hours[hour_at] > hour:
            return (self.hours[hour_at], self.minutes[0], self.seconds[0])
        minute_at = bisect_left(self.minutes, minute)
        if minute_at < len(self.minutes):
            if self.minutes[minute_at] > minute:
                return (hour, self.minutes[minute_at], self.seconds[0])
            second_at = bisect_left(self.seconds, second)
            if second_at < len(self.seconds):
                return (hour, minute, self.seconds[second_at])
            if minute_at + 1 < len(self.minutes):
                return (hour, self.minutes[minute_at + 1], self.seconds[0])
        if hour_at + 1 < len(self.hours):
            return (self.hours[hour_at + 1], self.minutes[0], self.seconds[0])
        return None


def parse_cron(text: str) -> CronExpression:
    """Parse and validate ``text``; raises :class:`InvalidCronExpression`."""
    if not isinstance(text, str):
        raise InvalidArgument("cron expression", text, f"a string: {FIELD_COUNT_HELP}")
    return _parse_cron(text)


# The planner turns every due job's stored text back into an expression on every tick,
# and building the calendar tables is the costly part (10,000 jobs: 4.5 s a tick without
# the cache, 1.3 s with it). Expressions are immutable, so sharing them is safe.
@lru_cache(maxsize=4096)
def _parse_cron(text: str) -> CronExpression:
    fields = ALIASES.get(text.strip().lower(), text).split()
    if len(fields) not in (5, 6):
        raise InvalidCronExpression(text, "expression", text, FIELD_COUNT_HELP)
    # Vixie's split: a leading '*' in any clock field makes the entry interval-like.
    wall_clock = not any(clock.startswith("*") for clock in fields[:-3])
    if len(fields) == 5:
        fields.insert(0, "0")
    second, minute, hour, day_of_month, month, day_of_week = fields
    seconds = parse_time_field(SECOND, second, text)
    minutes = parse_time_field(MINUTE, minute, text)
    hours = parse_time_field(HOUR, hour, text)
    month_days = parse_day_of_month(day_of_month, text)
    months = frozenset(parse_time_field(MONTH, month, text))
    days = DayRule(
        month_days,
        parse_day_of_week(day_of_week, text),
        either_suffices=not day_of_month.startswith("*") and not day_of_week.startswith("*"),
    )
    expression = CronExpression(
        text, seconds, minutes, hours, months, days, wall_clock, _days_by_month_shape(days)
    )
    if not any(
        expression.days_by_shape[_shape(length, first_weekday)]
        for month_number in months
        for length in _possible_lengths(month_number)
        for first_weekday in range(7)
    ):
        raise InvalidCronExpression(
            text,
            "expression",
            text,
            "a schedule that can fire: no day in its months matches its day fields "
            "(such as February 30)",
        )
    return expression
