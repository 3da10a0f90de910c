"""Cron expressions: parsing, validation and matching local readings (``zoned.py``
turns readings into instants in an IANA time zone).

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
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache

from rota.domain.values import whole_number
from rota.errors import InvalidArgument

# A satisfiable calendar pattern recurs within ~40 years (February 29 on a given
# weekday is the rarest); searching a century is bounded and never gives up too early.
SEARCH_YEARS = 100
_LAST_SEARCHABLE_YEAR = 9998  # keeps `reading - offset` and probes inside datetime's range
_ONE_SECOND = timedelta(seconds=1)

MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

ALIASES: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_LISTS = "'*', ranges a-b, steps */n a/n a-b/n, and comma lists of these"
_FIELD_COUNT_HELP = (
    "5 fields (minute hour day-of-month month day-of-week), "
    "6 fields (second minute hour day-of-month month day-of-week), "
    "or one of " + " ".join(ALIASES)
)


class InvalidCronExpression(InvalidArgument):
    """A cron expression rota cannot accept; names the field, the token and what is allowed."""

    def __init__(self, expression: str, field: str, token: str, allowed: str) -> None:
        super().__init__(f"cron {field}", token, allowed)
        self.expression = expression
        self.field = field
        self.token = token
        # InvalidArgument's message has no room for the whole expression; users need it
        # to find the token when the same value appears in several fields.
        where = "" if token == expression else f" in {expression!r}"
        self.args = (f"invalid cron {field}: {token!r}{where}; expected {allowed}",)


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] means low + i
    allowed: str = ""


_SECOND = _FieldSpec("second", 0, 59, allowed=f"0-59, {_LISTS}")
_MINUTE = _FieldSpec("minute", 0, 59, allowed=f"0-59, {_LISTS}")
_HOUR = _FieldSpec("hour", 0, 23, allowed=f"0-23, {_LISTS}")
_DAY_OF_MONTH = _FieldSpec(
    "day-of-month",
    1,
    31,
    allowed=f"1-31, L (last day), LW (last weekday), nW (weekday nearest day n), {_LISTS}",
)
_MONTH = _FieldSpec("month", 1, 12, MONTH_NAMES, allowed=f"1-12 or JAN-DEC, {_LISTS}")
_DAY_OF_WEEK = _FieldSpec(
    "day-of-week",
    0,
    7,
    WEEKDAY_NAMES,
    allowed=(
        "0-7 or SUN-SAT (0 and 7 are Sunday), n#k (k-th weekday n of the month, k 1-5), "
        f"nL (last weekday n of the month), {_LISTS}"
    ),
)

_PLAIN = re.compile(r"(?P<start>\*|[0-9A-Za-z]+)(?:-(?P<end>[0-9A-Za-z]+))?(?:/(?P<step>[0-9]+))?")
_NEAREST_WEEKDAY = re.compile(r"([0-9]+)W")
_NTH_WEEKDAY = re.compile(r"([0-9A-Za-z]+)#([0-9]+)")
_LAST_WEEKDAY_OF = re.compile(r"([0-9A-Za-z]+)L")


class _BadToken(Exception):
    """Internal: a token failed; the caller adds field and expression to the message."""


def _number(text: str) -> int:
    try:
        return whole_number("cron field", text, 0, 999_999_999)
    except InvalidArgument:
        raise _BadToken from None


def _value(spec: _FieldSpec, text: str) -> int:
    upper = text.upper()
    if upper in spec.names:
        return spec.low + spec.names.index(upper)
    value = _number(text)
    if not spec.low <= value <= spec.high:
        raise _BadToken
    return value


def _plain_values(spec: _FieldSpec, token: str) -> set[int]:
    """Numbers, names, ranges and steps: the part of the syntax every field shares."""
    match = _PLAIN.fullmatch(token)
    if match is None:
        raise _BadToken
    start_text, end_text, step_text = match.group("start", "end", "step")
    if start_text == "*":
        if end_text is not None:
            raise _BadToken
        start, end = spec.low, spec.high
    else:
        start = _value(spec, start_text)
        # 'a/n' runs to the top of the field, as in cronie and cronsim.
        end = _value(spec, end_text) if end_text else (spec.high if step_text else start)
    step = _number(step_text) if step_text else 1
    if start > end or step < 1:
        raise _BadToken
    return set(range(start, end + 1, step))


def _tokens(spec: _FieldSpec, text: str, expression: str) -> list[str]:
    tokens = text.split(",")
    if not all(tokens):
        raise InvalidCronExpression(expression, spec.name, text, spec.allowed)
    return tokens


def _parse_time_field(spec: _FieldSpec, text: str, expression: str) -> tuple[int, ...]:
    values: set[int] = set()
    for token in _tokens(spec, text, expression):
        try:
            values |= _plain_values(spec, token)
        except _BadToken:
            raise InvalidCronExpression(expression, spec.name, token, spec.allowed) from None
    return tuple(sorted(values))


@dataclass(frozen=True)
class MonthDays:
    """The day-of-month field: plain days, ``L``, ``LW`` and ``nW``."""

    days: frozenset[int]
    last_day: bool
    last_weekday: bool
    nearest_weekday_to: frozenset[int]

    def matches(self, day: int, weekday: int, month_length: int) -> bool:
        if day in self.days or (self.last_day and day == month_length):
            return True
        targets = (*self.nearest_weekday_to, *((month_length,) if self.last_weekday else ()))
        return any(
            day == _nearest_weekday(target, month_length, (weekday + target - day) % 7)
            for target in targets
            if target <= month_length  # no 31st in April: '31W' skips it, like '31'
        )


def _nearest_weekday(target: int, month_length: int, target_weekday: int) -> int:
    """The Monday-Friday day closest to ``target`` without leaving the month (Quartz 'W').

    ``LW`` is the nearest weekday to the last day, so it shares this rule.
    """
    if target_weekday == 6:  # Saturday: Friday before, unless that is last month
        return target - 1 if target > 1 else target + 2
    if target_weekday == 0:  # Sunday: Monday after, unless that is next month
        return target + 1 if target < month_length else target - 2
    return target


@dataclass(frozen=True)
class WeekDays:
    """The day-of-week field (0 = Sunday): plain weekdays, ``n#k`` and ``nL``."""

    weekdays: frozenset[int]
    nth_weekdays: frozenset[tuple[int, int]]
    last_of_weekdays: frozenset[int]

    def matches(self, day: int, weekday: int, month_length: int) -> bool:
        return (
            weekday in self.weekdays
            or (weekday, (day + 6) // 7) in self.nth_weekdays
            or (weekday in self.last_of_weekdays and day + 7 > month_length)
        )


def _parse_day_of_month(text: str, expression: str) -> MonthDays:
    spec = _DAY_OF_MONTH
    days: set[int] = set()
    nearest: set[int] = set()
    last_day = last_weekday = False
    for token in _tokens(spec, text, expression):
        upper = token.upper()
        try:
            if upper == "L":
                last_day = True
            elif upper == "LW":
                last_weekday = True
            elif match := _NEAREST_WEEKDAY.fullmatch(upper):
                nearest.add(_value(spec, match.group(1)))
            else:
                days |= _plain_values(spec, token)
        except _BadToken:
            raise InvalidCronExpression(expression, spec.name, token, spec.allowed) from None
    return MonthDays(frozenset(days), last_day, last_weekday, frozenset(nearest))


def _parse_day_of_week(text: str, expression: str) -> WeekDays:
    spec = _DAY_OF_WEEK
    weekdays: set[int] = set()
    nth: set[tuple[int, int]] = set()
    last_of: set[int] = set()
    for token in _tokens(spec, text, expression):
        try:
            if match := _NTH_WEEKDAY.fullmatch(token):
                nth.add((_value(spec, match.group(1)) % 7, _occurrence(match.group(2))))
            elif match := _LAST_WEEKDAY_OF.fullmatch(token.upper()):
                last_of.add(_value(spec, match.group(1)) % 7)
            else:
                weekdays |= {value % 7 for value in _plain_values(spec, token)}
        except _BadToken:
            raise InvalidCronExpression(expression, spec.name, token, spec.allowed) from None
    return WeekDays(frozenset(weekdays), frozenset(nth), frozenset(last_of))


def _occurrence(text: str) -> int:
    # A month has at most five of any weekday.
    occurrence = _number(text)
    if not 1 <= occurrence <= 5:
        raise _BadToken
    return occurrence


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
        raise InvalidArgument("cron expression", text, f"a string: {_FIELD_COUNT_HELP}")
    return _parse_cron(text)


# The planner turns every due job's stored text back into an expression on every tick,
# and building the calendar tables is the costly part (10,000 jobs: 4.5 s a tick without
# the cache, 1.3 s with it). Expressions are immutable, so sharing them is safe.
@lru_cache(maxsize=4096)
def _parse_cron(text: str) -> CronExpression:
    fields = ALIASES.get(text.strip().lower(), text).split()
    if len(fields) not in (5, 6):
        raise InvalidCronExpression(text, "expression", text, _FIELD_COUNT_HELP)
    # Vixie's split: a leading '*' in any clock field makes the entry interval-like.
    wall_clock = not any(clock.startswith("*") for clock in fields[:-3])
    if len(fields) == 5:
        fields.insert(0, "0")
    second, minute, hour, day_of_month, month, day_of_week = fields
    seconds = _parse_time_field(_SECOND, second, text)
    minutes = _parse_time_field(_MINUTE, minute, text)
    hours = _parse_time_field(_HOUR, hour, text)
    month_days = _parse_day_of_month(day_of_month, text)
    months = frozenset(_parse_time_field(_MONTH, month, text))
    days = DayRule(
        month_days,
        _parse_day_of_week(day_of_week, text),
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
