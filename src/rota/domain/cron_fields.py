"""Cron fields: reading each of an expression's fields into the values it allows.

Every field shares numbers, names, ranges, steps and comma lists; day-of-month adds
``L``, ``LW`` and ``nW`` (:class:`MonthDays`), day-of-week adds ``n#k`` and ``nL``
(:class:`WeekDays`). ``cron.py`` puts the fields together into an expression and
matches it. The rules are decided in docs/adr/0003-cron-and-dst-rules.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rota.domain.values import whole_number
from rota.errors import InvalidArgument

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
FIELD_COUNT_HELP = (
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
class FieldSpec:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] means low + i
    allowed: str = ""


SECOND = FieldSpec("second", 0, 59, allowed=f"0-59, {_LISTS}")
MINUTE = FieldSpec("minute", 0, 59, allowed=f"0-59, {_LISTS}")
HOUR = FieldSpec("hour", 0, 23, allowed=f"0-23, {_LISTS}")
_DAY_OF_MONTH = FieldSpec(
    "day-of-month",
    1,
    31,
    allowed=f"1-31, L (last day), LW (last weekday), nW (weekday nearest day n), {_LISTS}",
)
MONTH = FieldSpec("month", 1, 12, MONTH_NAMES, allowed=f"1-12 or JAN-DEC, {_LISTS}")
_DAY_OF_WEEK = FieldSpec(
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


def _value(spec: FieldSpec, text: str) -> int:
    upper = text.upper()
    if upper in spec.names:
        return spec.low + spec.names.index(upper)
    value = _number(text)
    if not spec.low <= value <= spec.high:
        raise _BadToken
    return value


def _plain_values(spec: FieldSpec, token: str) -> set[int]:
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


def _tokens(spec: FieldSpec, text: str, expression: str) -> list[str]:
    tokens = text.split(",")
    if not all(tokens):
        raise InvalidCronExpression(expression, spec.name, text, spec.allowed)
    return tokens


def parse_time_field(spec: FieldSpec, text: str, expression: str) -> tuple[int, ...]:
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


def parse_day_of_month(text: str, expression: str) -> MonthDays:
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


def parse_day_of_week(text: str, expression: str) -> WeekDays:
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
