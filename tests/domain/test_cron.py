"""Cron dialect, validation and the DST rules on hand-picked days (ADR 0003)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rota.domain.cron import InvalidCronExpression, parse_cron
from rota.domain.zoned import UnknownTimeZone, load_zone, next_fire
from rota.errors import InvalidArgument, RotaError

NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def fires(expression: str, start: datetime, count: int, zone: str = "UTC") -> list[datetime]:
    """The next ``count`` fire instants after ``start``, in UTC.

    Compared in UTC on purpose: two aware datetimes with the same tzinfo compare by wall
    time and ignore ``fold``, which would hide exactly the bugs the DST tests look for.
    """
    cron, tz = parse_cron(expression), load_zone(zone)
    instant, found = start, []
    for _ in range(count):
        next_instant = next_fire(cron, tz, instant)
        assert next_instant is not None
        assert next_instant > instant
        assert next_instant.tzinfo is UTC
        found.append(next_instant)
        instant = next_instant
    return found


def days(expression: str, count: int, start: datetime | None = None) -> list[str]:
    """Fire dates (UTC) as 'MM-DD' for day-field tests."""
    start = start or datetime(2026, 1, 1, tzinfo=UTC)
    return [f"{fire:%m-%d}" for fire in fires(expression, start, count)]


JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday


# --- fields -------------------------------------------------------------------------------


def test_five_fields_are_minute_hour_day_month_weekday() -> None:
    assert fires("5 4 * * *", JAN_1, 2) == [
        datetime(2026, 1, 1, 4, 5, tzinfo=UTC),
        datetime(2026, 1, 2, 4, 5, tzinfo=UTC),
    ]


def test_six_fields_put_seconds_first() -> None:
    # croniter would read this as seconds LAST unless told otherwise.
    assert fires("1 2 3 * * *", JAN_1, 2) == [
        datetime(2026, 1, 1, 3, 2, 1, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 2, 1, tzinfo=UTC),
    ]


def test_six_field_seconds_step() -> None:
    assert [f.second for f in fires("*/20 * * * * *", JAN_1, 4)] == [20, 40, 0, 20]


@pytest.mark.parametrize(
    ("expression", "minutes"),
    [
        ("10-12 * * * *", [10, 11, 12, 10]),
        ("*/20 * * * *", [20, 40, 0, 20]),
        ("5-50/15 * * * *", [5, 20, 35, 50, 5]),
        ("50/3 * * * *", [50, 53, 56, 59, 50]),  # 'a/n' runs to the top of the field
        ("1,3,58 * * * *", [1, 3, 58, 1]),
        ("1-2,30-31 * * * *", [1, 2, 30, 31, 1]),
        ("*/100 * * * *", [0, 0]),  # a step wider than the field leaves its start
        ("7-7/5 * * * *", [7, 7]),  # a one-value range stays one value (cronsim: 7/5)
        ("07 * * * *", [7, 7]),
    ],
)
def test_ranges_steps_and_lists(expression: str, minutes: list[int]) -> None:
    assert [f.minute for f in fires(expression, JAN_1, len(minutes))] == minutes


def test_month_names_any_case() -> None:
    months = [f.month for f in fires("0 0 1 jan,Mar-MAY *", JAN_1, 4)]
    assert months == [3, 4, 5, 1]


def test_month_name_range_with_step() -> None:
    assert [f.month for f in fires("0 0 1 JAN-JUN/2 *", JAN_1, 3)] == [3, 5, 1]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("0 0 * * MON-WED", ["01-05", "01-06", "01-07", "01-12"]),
        ("0 0 * * sun", ["01-04", "01-11"]),
        ("0 0 * * 7", ["01-04", "01-11"]),  # 7 is Sunday, like 0
        ("0 0 * * 5-7", ["01-02", "01-03", "01-04", "01-09"]),
        ("0 0 * * 1/2", ["01-02", "01-04", "01-05", "01-07"]),  # 1,3,5,7: Sunday too
    ],
)
def test_weekdays(expression: str, expected: list[str]) -> None:
    assert days(expression, len(expected)) == expected


# --- special day tokens (January 2026 starts on a Thursday) -------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # Last day: 31 Jan, 28 Feb (2026 is not a leap year), 31 Mar.
        ("0 0 L * *", ["01-31", "02-28", "03-31"]),
        ("0 0 1,L * *", ["01-31", "02-01", "02-28"]),
        # Last weekday: 31 Jan is a Saturday, 28 Feb a Saturday, 31 Mar a Tuesday,
        # 31 May a Sunday.
        ("0 0 LW * *", ["01-30", "02-27", "03-31", "04-30", "05-29"]),
        # 15 Feb and 15 Mar are Sundays (-> Monday), 15 Aug a Saturday (-> Friday).
        ("0 0 15W 2,3,8 *", ["02-16", "03-16", "08-14"]),
        # 1 Aug is a Saturday: the nearest weekday inside the month is Monday the 3rd.
        ("0 0 1W 8 *", ["08-03"]),
        # 31 May is a Sunday: Friday the 29th; months without a 31st do not fire.
        ("0 0 31W * *", ["01-30", "03-31", "05-29", "07-31"]),
        # Fridays: 2, 9, 16, 23, 30 Jan; 6, 13, 20, 27 Feb.
        ("0 0 * * 5#3", ["01-16", "02-20", "03-20"]),
        ("0 0 * * FRI#3", ["01-16", "02-20", "03-20"]),
        ("0 0 * * 5L", ["01-30", "02-27", "03-27"]),
        ("0 0 * * fril", ["01-30", "02-27", "03-27"]),
        ("0 0 * * 1#1,5L", ["01-05", "01-30", "02-02", "02-27"]),
        ("0 0 * * 0#5", ["03-29", "05-31", "08-30"]),  # months with five Sundays
    ],
)
def test_special_day_tokens(expression: str, expected: list[str]) -> None:
    assert days(expression, len(expected)) == expected


# --- the Vixie day rule and the croniter gaps ---------------------------------------------


def test_both_day_fields_restricted_means_either_matches() -> None:
    # Mondays (5, 12, 19, 26 Jan) OR the 1st (1 Feb is a Sunday).
    assert days("0 0 1 * 1", 5) == ["01-05", "01-12", "01-19", "01-26", "02-01"]


def test_a_day_field_starting_with_star_means_both_must_match() -> None:
    # Odd days that are Mondays: 5 and 19 Jan, 9 and 23 Feb.
    assert days("0 0 */2 * 1", 4) == ["01-05", "01-19", "02-09", "02-23"]


def test_a_full_range_without_star_still_counts_as_restricted() -> None:
    # Vixie decides on the leading '*', not on what the field expands to.
    assert days("0 0 1-31 * 1", 3) == ["01-02", "01-03", "01-04"]


def test_day_of_month_or_nth_weekday_croniter_raises_on() -> None:
    # croniter 7.0 raises CroniterBadDateError here. Rule: the 10th OR the third Friday.
    assert days("0 0 10 * 5#3", 6) == ["01-10", "01-16", "02-10", "02-20", "03-10", "03-20"]


def test_day_of_month_or_nth_weekday_croniter_drops_the_day_of_month() -> None:
    # croniter 7.0 fires only on first Fridays. Rule: the 7th OR the first Friday.
    assert days("0 0 7 * 5#1", 6) == ["01-02", "01-07", "02-06", "02-07", "03-06", "03-07"]


def test_day_of_month_or_last_weekday_of_month() -> None:
    assert days("0 0 1 * 5L", 4) == ["01-30", "02-01", "02-27", "03-01"]


# --- aliases -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("@hourly", datetime(2026, 1, 1, 1, tzinfo=UTC)),
        ("@daily", datetime(2026, 1, 2, tzinfo=UTC)),
        ("@midnight", datetime(2026, 1, 2, tzinfo=UTC)),
        ("@weekly", datetime(2026, 1, 4, tzinfo=UTC)),  # Sunday
        ("@monthly", datetime(2026, 2, 1, tzinfo=UTC)),
        ("@yearly", datetime(2027, 1, 1, tzinfo=UTC)),
        ("@annually", datetime(2027, 1, 1, tzinfo=UTC)),
        ("@DAILY", datetime(2026, 1, 2, tzinfo=UTC)),
    ],
)
def test_aliases(alias: str, expected: datetime) -> None:
    assert fires(alias, JAN_1, 1) == [expected]


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "field", "token"),
    [
        ("0 0 * * 8", "day-of-week", "8"),
        ("60 * * * *", "minute", "60"),
        ("0 24 * * *", "hour", "24"),
        ("0 0 0 * *", "day-of-month", "0"),
        ("0 0 32 * *", "day-of-month", "32"),
        ("0 0 * 13 *", "month", "13"),
        ("0 0 * 0 *", "month", "0"),
        ("0 0 * FOO *", "month", "FOO"),
        ("0 0 * * FUNDAY", "day-of-week", "FUNDAY"),
        ("60 0 0 * * *", "second", "60"),
        ("0 0 5-1 * *", "day-of-month", "5-1"),  # no wrap-around ranges
        ("*/0 * * * *", "minute", "*/0"),
        ("0 */x * * *", "hour", "*/x"),
        ("*-5 * * * *", "minute", "*-5"),
        ("0 0 * * 5#6", "day-of-week", "5#6"),
        ("0 0 * * 5#0", "day-of-week", "5#0"),
        ("0 0 * * 8#1", "day-of-week", "8#1"),
        ("0 0 * * L", "day-of-week", "L"),
        ("0 0 * * 8L", "day-of-week", "8L"),
        ("0 0 32W * *", "day-of-month", "32W"),
        ("0 0 0W * *", "day-of-month", "0W"),
        ("0 0 L-2 * *", "day-of-month", "L-2"),
        ("0 0 LW/2 * *", "day-of-month", "LW/2"),
        ("0 0 ? * *", "day-of-month", "?"),
        ("H * * * *", "minute", "H"),
        ("0 0 1,,2 * *", "day-of-month", "1,,2"),
        ("0 0 1, * *", "day-of-month", "1,"),
        ("0 0 * * -1", "day-of-week", "-1"),
        ("0 0 * * ²", "day-of-week", "²"),
        ("0 0 * * 5#" + "9" * 5000, "day-of-week", "5#" + "9" * 5000),
    ],
)
def test_errors_name_the_field_the_token_and_what_is_allowed(
    expression: str, field: str, token: str
) -> None:
    with pytest.raises(InvalidCronExpression) as caught:
        parse_cron(expression)
    error = caught.value
    assert (error.field, error.token, error.expression) == (field, token, expression)
    assert str(error).startswith(f"invalid cron {field}: {token!r} in {expression!r}; expected ")
    assert isinstance(error, InvalidArgument)
    assert isinstance(error, RotaError)


def test_day_of_week_error_lists_the_allowed_forms() -> None:
    with pytest.raises(InvalidCronExpression) as caught:
        parse_cron("0 0 * * 8")
    assert str(caught.value).startswith(
        "invalid cron day-of-week: '8' in '0 0 * * 8'; expected 0-7 or SUN-SAT"
    )
    assert "n#k" in str(caught.value)
    assert "nL" in str(caught.value)


@pytest.mark.parametrize(
    "expression", ["", "   ", "1 2 3", "* * * *", "0 0 0 1 1 * 2026", "@reboot", "@every 5m"]
)
def test_wrong_field_count_says_five_or_six(expression: str) -> None:
    with pytest.raises(InvalidCronExpression) as caught:
        parse_cron(expression)
    assert caught.value.field == "expression"
    assert "5 fields" in str(caught.value)
    assert "6 fields" in str(caught.value)


def test_a_non_string_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        parse_cron(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "expression",
    ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "0 0 30,31 FEB *", "0 0 31W 4 *"],
)
def test_a_schedule_that_can_never_fire_is_refused(expression: str) -> None:
    with pytest.raises(InvalidCronExpression, match="can fire"):
        parse_cron(expression)


def test_february_29_is_valid_and_fires_in_leap_years() -> None:
    assert fires("0 0 29 2 *", JAN_1, 3) == [
        datetime(2028, 2, 29, tzinfo=UTC),
        datetime(2032, 2, 29, tzinfo=UTC),
        datetime(2036, 2, 29, tzinfo=UTC),
    ]


def test_day_30_in_february_can_still_fire_on_a_weekday() -> None:
    # Both day fields restricted: the Mondays of February fire.
    assert days("0 0 30 2 1", 2) == ["02-02", "02-09"]


def test_rarest_calendar_pattern_is_found_without_giving_up() -> None:
    # February 29 on a Sunday: 2032, then 2060, 2088 and, with 2100 not leap, 2128.
    assert [f.year for f in fires("0 0 29 2 */7", JAN_1, 4)] == [2032, 2060, 2088, 2128]


def test_search_ends_at_the_end_of_the_calendar() -> None:
    cron = parse_cron("0 0 1 1 *")
    assert next_fire(cron, load_zone("UTC"), datetime(9998, 6, 1, tzinfo=UTC)) is None


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "", "America", "../etc/passwd", "utc "])
def test_unknown_time_zone_is_named(name: str) -> None:
    with pytest.raises(UnknownTimeZone) as caught:
        load_zone(name)
    assert caught.value.value == name
    assert "IANA" in str(caught.value)


# --- instants ------------------------------------------------------------------------------


def test_next_fire_is_strictly_after_even_on_a_fire_instant() -> None:
    cron, utc = parse_cron("* * * * * *"), load_zone("UTC")
    instant = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert next_fire(cron, utc, instant) == instant + timedelta(seconds=1)
    assert next_fire(cron, utc, instant + timedelta(microseconds=1)) == instant + timedelta(
        seconds=1
    )
    assert next_fire(cron, utc, instant - timedelta(microseconds=1)) == instant


def test_next_fire_answers_in_utc_whatever_zone_after_is_in() -> None:
    after = datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("Asia/Tokyo"))  # 00:00 UTC
    fire = next_fire(parse_cron("0 * * * *"), load_zone("UTC"), after)
    assert fire == datetime(2026, 1, 1, 1, tzinfo=UTC)
    assert fire is not None
    assert fire.tzinfo is UTC


def test_fractional_offset_zone() -> None:
    # Kathmandu is UTC+05:45.
    assert fires("30 9 * * *", JAN_1, 1, "Asia/Kathmandu") == [
        datetime(2026, 1, 1, 3, 45, tzinfo=UTC)
    ]


# --- which entries follow the wall clock ---------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "wall_clock"),
    [
        ("30 2 * * *", True),
        ("0 9-17 * * MON-FRI", True),
        ("0,30 1,2 * * *", True),
        ("0 0-23 * * *", True),  # every hour, but spelled as fixed times
        ("@daily", True),
        ("0 30 2 * * *", True),
        ("0 * * * *", False),
        ("@hourly", False),
        ("*/15 * * * *", False),
        ("0 */2 * * *", False),
        ("*/15 2 * * *", False),
        ("* 2 * * *", False),
        ("*/10 30 2 * * *", False),
        ("0 0 * * * *", False),
    ],
)
def test_wall_clock_means_no_clock_field_starts_with_star(
    expression: str, wall_clock: bool
) -> None:
    assert parse_cron(expression).wall_clock is wall_clock


# --- DST: hand-picked days (a whole year is simulated in test_dst_simulation.py) ----------


def local(
    zone: ZoneInfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0, fold: int = 0
) -> datetime:
    """The UTC instant of a local reading (``fold`` picks the pass of a repeated hour)."""
    return datetime(year, month, day, hour, minute, tzinfo=zone, fold=fold).astimezone(UTC)


def test_time_in_the_spring_gap_fires_when_the_gap_ends() -> None:
    # 8 March 2026: New York skips 02:00-03:00.
    found = fires("30 2 * * *", datetime(2026, 3, 7, 12, tzinfo=UTC), 2, "America/New_York")
    assert found == [local(NEW_YORK, 2026, 3, 8, 3), local(NEW_YORK, 2026, 3, 9, 2, 30)]
    assert found[0] == datetime(2026, 3, 8, 7, tzinfo=UTC)


def test_several_times_in_one_gap_fire_once() -> None:
    found = fires("0,30 2 * * *", datetime(2026, 3, 7, 12, tzinfo=UTC), 3, "America/New_York")
    assert found == [
        local(NEW_YORK, 2026, 3, 8, 3),
        local(NEW_YORK, 2026, 3, 9, 2),
        local(NEW_YORK, 2026, 3, 9, 2, 30),
    ]


def test_gap_and_an_existing_time_at_its_end_fire_once() -> None:
    found = fires("0 2,3 * * *", datetime(2026, 3, 7, 12, tzinfo=UTC), 3, "America/New_York")
    assert found == [
        local(NEW_YORK, 2026, 3, 8, 3),
        local(NEW_YORK, 2026, 3, 9, 2),
        local(NEW_YORK, 2026, 3, 9, 3),
    ]


def test_half_hour_gap_in_lord_howe() -> None:
    # 4 October 2026: Lord Howe skips 02:00-02:30.
    found = fires("15 2 * * *", datetime(2026, 10, 3, tzinfo=UTC), 2, "Australia/Lord_Howe")
    assert found == [local(LORD_HOWE, 2026, 10, 4, 2, 30), local(LORD_HOWE, 2026, 10, 5, 2, 15)]


def test_repeated_time_fires_once_at_its_first_occurrence() -> None:
    # 1 November 2026: New York repeats 01:00-02:00.
    found = fires("30 1 * * *", datetime(2026, 10, 31, 12, tzinfo=UTC), 2, "America/New_York")
    assert found == [local(NEW_YORK, 2026, 11, 1, 1, 30), local(NEW_YORK, 2026, 11, 2, 1, 30)]
    assert found[0] == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # 01:30 EDT, not EST


def test_starting_inside_the_second_pass_does_not_fire_the_repeat() -> None:
    second_pass = local(NEW_YORK, 2026, 11, 1, 1, 10, fold=1)
    assert second_pass == datetime(2026, 11, 1, 6, 10, tzinfo=UTC)
    found = fires("30 1 * * *", second_pass, 1, "America/New_York")
    assert found == [local(NEW_YORK, 2026, 11, 2, 1, 30)]


def test_starting_inside_the_first_pass_fires_the_first_occurrence() -> None:
    first_pass = local(NEW_YORK, 2026, 11, 1, 1, 10)
    found = fires("30 1,2 * * *", first_pass, 2, "America/New_York")
    assert found == [local(NEW_YORK, 2026, 11, 1, 1, 30), local(NEW_YORK, 2026, 11, 1, 2, 30)]
    assert found[1] - found[0] == timedelta(hours=2)  # elapsed: the hour is repeated


def test_interval_like_entry_fires_in_both_passes_and_skips_the_gap() -> None:
    fall = fires("*/30 1 * * *", datetime(2026, 11, 1, 4, tzinfo=UTC), 4, "America/New_York")
    readings = [fire.astimezone(NEW_YORK) for fire in fall]
    assert [(r.hour, r.minute, r.fold) for r in readings] == [
        (1, 0, 0),
        (1, 30, 0),
        (1, 0, 1),
        (1, 30, 1),
    ]
    spring = fires("*/30 2 * * *", datetime(2026, 3, 8, 5, tzinfo=UTC), 1, "America/New_York")
    assert spring == [local(NEW_YORK, 2026, 3, 9, 2)]


def test_every_hour_spelled_as_fixed_times_follows_the_wall_clock() -> None:
    # Vixie's rule looks at the leading '*': '0-23' is 24 fixed times, so a transition
    # day has 23 fires (02:00 collapses into 03:00) and 24 (01:00 fires once).
    def fires_on(expression: str, day: int, month: int) -> int:
        start = local(NEW_YORK, 2026, month, day) - timedelta(microseconds=1)
        end = local(NEW_YORK, 2026, month, day + 1)
        return sum(fire < end for fire in fires(expression, start, 30, "America/New_York"))

    assert (fires_on("0 0-23 * * *", 8, 3), fires_on("0 0-23 * * *", 1, 11)) == (23, 24)
    assert (fires_on("0 * * * *", 8, 3), fires_on("0 * * * *", 1, 11)) == (23, 25)


def test_midnight_that_does_not_exist() -> None:
    # 6 September 2026: Santiago jumps from 24:00 to 01:00.
    santiago = ZoneInfo("America/Santiago")
    found = fires("0 0 * * *", datetime(2026, 9, 5, tzinfo=UTC), 3, "America/Santiago")
    assert found == [
        local(santiago, 2026, 9, 5),
        local(santiago, 2026, 9, 6, 1),
        local(santiago, 2026, 9, 7),
    ]
    assert found[1] == datetime(2026, 9, 6, 4, tzinfo=UTC)


def test_a_skipped_calendar_day_fires_when_it_ends() -> None:
    # Samoa skipped 30 December 2011 entirely.
    apia = ZoneInfo("Pacific/Apia")
    found = fires("0 12 * * *", datetime(2011, 12, 29, tzinfo=UTC), 3, "Pacific/Apia")
    assert found == [
        local(apia, 2011, 12, 29, 12),
        local(apia, 2011, 12, 31),
        local(apia, 2011, 12, 31, 12),
    ]
    assert found[1] == datetime(2011, 12, 30, 10, tzinfo=UTC)
