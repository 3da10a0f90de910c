"""A year of fire times in three DST zones, checked against the DST rules of ADR 0003.

Every fire from 2026-01-01 to 2027-01-01 (local) is compared with a list built
independently here, straight from zoneinfo: for each matching local reading, the real
instants that show it (none inside a gap, two in a repeated hour). Wall-clock entries
keep only the first of them, or the end of the gap. Transition days are also checked
against counts worked out by hand.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from functools import cache
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from rota.domain.triggers import CronTrigger

ZONES = ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe")
YEAR_DAYS = [date(2026, 1, 1) + timedelta(days=k) for k in range(365)]

# (spring-forward day, fall-back day) in 2026.
TRANSITION_DAYS = {
    "America/New_York": (date(2026, 3, 8), date(2026, 11, 1)),  # 02:00->03:00, 02:00->01:00
    "Europe/Berlin": (date(2026, 3, 29), date(2026, 10, 25)),  # 02:00->03:00, 03:00->02:00
    "Australia/Lord_Howe": (date(2026, 10, 4), date(2026, 4, 5)),  # 02:00->02:30, 02:00->01:30
}


@cache
def simulate(expression: str, zone_name: str) -> tuple[datetime, ...]:
    """Every fire of the year, stepping next_after from fire to fire."""
    zone = ZoneInfo(zone_name)
    trigger = CronTrigger(expression, zone_name)
    start = datetime(2026, 1, 1, tzinfo=zone).astimezone(UTC) - timedelta(microseconds=1)
    end = datetime(2027, 1, 1, tzinfo=zone).astimezone(UTC)
    fired: list[datetime] = []
    instant = trigger.next_after(start)
    while instant is not None and instant < end:
        fired.append(instant)
        instant = trigger.next_after(instant)
    return tuple(fired)


def instants_showing(reading: datetime, zone: ZoneInfo) -> list[datetime]:
    """The real instants whose local time is ``reading``: 0 in a gap, 2 in a repeat."""
    found = set()
    for fold in (0, 1):
        instant = reading.replace(tzinfo=zone, fold=fold).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == reading:
            found.add(instant)
    return sorted(found)


def gap_end(reading: datetime, zone: ZoneInfo) -> datetime:
    """The first real instant after a non-existent reading (gaps end on whole minutes)."""
    for minute in range(1, 24 * 60):
        later = instants_showing(reading + timedelta(minutes=minute), zone)
        if later:
            return later[0]
    raise AssertionError(f"no gap end after {reading}")


def expected_wall_clock(hour: int, minute: int, zone: ZoneInfo) -> list[datetime]:
    expected = []
    for day in YEAR_DAYS:
        reading = datetime(day.year, day.month, day.day, hour, minute)
        showing = instants_showing(reading, zone)
        expected.append(showing[0] if showing else gap_end(reading, zone))
    return expected


def expected_interval_like(minutes: range, zone: ZoneInfo) -> list[datetime]:
    expected = []
    for day in YEAR_DAYS:
        for hour in range(24):
            for minute in minutes:
                reading = datetime(day.year, day.month, day.day, hour, minute)
                expected.extend(instants_showing(reading, zone))
    return sorted(expected)


def per_local_day(fired: tuple[datetime, ...], zone: ZoneInfo) -> Counter[date]:
    return Counter(instant.astimezone(zone).date() for instant in fired)


@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize("expression", ["30 2 * * *", "30 1 * * *", "*/15 * * * *", "0 * * * *"])
def test_fire_instants_strictly_increase(expression: str, zone_name: str) -> None:
    fired = simulate(expression, zone_name)
    assert all(earlier < later for earlier, later in pairwise(fired))


@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize(("expression", "hour"), [("30 2 * * *", 2), ("30 1 * * *", 1)])
def test_daily_entry_fires_once_every_local_day(expression: str, hour: int, zone_name: str) -> None:
    zone = ZoneInfo(zone_name)
    fired = simulate(expression, zone_name)
    assert set(per_local_day(fired, zone).values()) == {1}
    assert len(fired) == 365
    assert list(fired) == expected_wall_clock(hour, 30, zone)


@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize(
    ("expression", "minutes"), [("*/15 * * * *", range(0, 60, 15)), ("0 * * * *", range(1))]
)
def test_interval_like_entry_fires_at_every_instant_that_shows_a_match(
    expression: str, minutes: range, zone_name: str
) -> None:
    assert list(simulate(expression, zone_name)) == expected_interval_like(
        minutes, ZoneInfo(zone_name)
    )


# --- the transition days, by hand ----------------------------------------------------------


@pytest.mark.parametrize(
    ("zone_name", "hourly", "quarterly"),
    [
        # New York and Berlin lose and repeat a whole hour.
        ("America/New_York", (23, 25), (92, 100)),
        ("Europe/Berlin", (23, 25), (92, 100)),
        # Lord Howe shifts by 30 minutes: the gap 02:00-02:30 holds one o'clock reading
        # (02:00); the repeat 01:30-02:00 holds none, but two quarter-hours.
        ("Australia/Lord_Howe", (23, 24), (94, 98)),
    ],
)
def test_counts_on_transition_days(
    zone_name: str, hourly: tuple[int, int], quarterly: tuple[int, int]
) -> None:
    zone = ZoneInfo(zone_name)
    spring, fall = TRANSITION_DAYS[zone_name]
    hours = per_local_day(simulate("0 * * * *", zone_name), zone)
    quarters = per_local_day(simulate("*/15 * * * *", zone_name), zone)
    assert (hours[spring], hours[fall]) == hourly
    assert (quarters[spring], quarters[fall]) == quarterly
    ordinary = [day for day in YEAR_DAYS if day not in (spring, fall)]
    assert {hours[day] for day in ordinary} == {24}
    assert {quarters[day] for day in ordinary} == {96}


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("zone_name", "expression", "day", "instant"),
    [
        # 02:30 does not exist: fire when the gap ends, at 03:00 local.
        ("America/New_York", "30 2 * * *", date(2026, 3, 8), utc(2026, 3, 8, 7)),
        ("Europe/Berlin", "30 2 * * *", date(2026, 3, 29), utc(2026, 3, 29, 1)),
        # Lord Howe's gap ends at 02:30: the time exists and fires as usual.
        ("Australia/Lord_Howe", "30 2 * * *", date(2026, 10, 4), utc(2026, 10, 3, 15, 30)),
        # Repeated readings fire once, at the first occurrence (summer time).
        ("America/New_York", "30 1 * * *", date(2026, 11, 1), utc(2026, 11, 1, 5, 30)),
        ("Europe/Berlin", "30 2 * * *", date(2026, 10, 25), utc(2026, 10, 25, 0, 30)),
        ("Australia/Lord_Howe", "30 1 * * *", date(2026, 4, 5), utc(2026, 4, 4, 14, 30)),
    ],
)
def test_daily_entry_on_its_transition_day(
    zone_name: str, expression: str, day: date, instant: datetime
) -> None:
    zone = ZoneInfo(zone_name)
    on_day = [f for f in simulate(expression, zone_name) if f.astimezone(zone).date() == day]
    assert on_day == [instant]


def test_both_passes_of_the_repeated_hour_fire_for_interval_like_entries() -> None:
    zone = ZoneInfo("America/New_York")
    fired = simulate("*/15 * * * *", "America/New_York")
    window = [f for f in fired if utc(2026, 11, 1, 5) <= f < utc(2026, 11, 1, 7)]
    readings = [(f.astimezone(zone).hour, f.astimezone(zone).minute) for f in window]
    assert readings == [(1, 0), (1, 15), (1, 30), (1, 45)] * 2
    assert [f.astimezone(zone).fold for f in window] == [0] * 4 + [1] * 4


@pytest.mark.parametrize(
    ("expression", "total"),
    [("30 2 * * *", 365), ("30 1 * * *", 365), ("*/15 * * * *", 35040), ("0 * * * *", 8760)],
)
def test_yearly_totals_in_new_york(expression: str, total: int) -> None:
    # One hour lost in March, one repeated in November: the year still has 8760 hours.
    assert len(simulate(expression, "America/New_York")) == total
