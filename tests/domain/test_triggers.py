"""Triggers: construction checks, next_after, fire_times and describe."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rota.domain.cron import InvalidCronExpression
from rota.domain.triggers import (
    CronTrigger,
    IntervalTrigger,
    OnceTrigger,
    Trigger,
    describe,
    fire_times,
)
from rota.domain.zoned import UnknownTimeZone
from rota.errors import InvalidArgument

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NEW_YORK = ZoneInfo("America/New_York")


# --- CronTrigger ---------------------------------------------------------------------------


def test_cron_trigger_defaults_to_utc() -> None:
    trigger = CronTrigger("0 2 * * *")
    assert trigger.timezone == "UTC"
    assert trigger.next_after(T0) == datetime(2026, 1, 1, 2, tzinfo=UTC)


def test_cron_trigger_reads_the_expression_in_its_zone() -> None:
    trigger = CronTrigger("0 2 * * *", "Europe/Berlin")
    assert trigger.next_after(T0) == datetime(2026, 1, 1, 1, tzinfo=UTC)  # 02:00 CET


def test_cron_trigger_validates_when_built() -> None:
    with pytest.raises(InvalidCronExpression):
        CronTrigger("0 0 30 2 *")
    with pytest.raises(UnknownTimeZone, match="Europe/Atlantis"):
        CronTrigger("0 2 * * *", "Europe/Atlantis")


def test_cron_trigger_is_a_frozen_value() -> None:
    trigger = CronTrigger("0 2 * * *", "Europe/Berlin")
    assert trigger == CronTrigger("0 2 * * *", "Europe/Berlin")
    assert hash(trigger) == hash(CronTrigger("0 2 * * *", "Europe/Berlin"))
    assert trigger != CronTrigger("0 2 * * *", "UTC")
    assert repr(trigger) == "CronTrigger(expression='0 2 * * *', timezone='Europe/Berlin')"
    with pytest.raises(dataclasses.FrozenInstanceError):
        trigger.expression = "* * * * *"  # type: ignore[misc]


def test_cron_trigger_says_whether_it_follows_the_wall_clock() -> None:
    assert CronTrigger("30 2 * * *").wall_clock
    assert not CronTrigger("*/15 * * * *").wall_clock


def test_cron_trigger_refuses_naive_datetimes() -> None:
    with pytest.raises(InvalidArgument, match="after"):
        CronTrigger("* * * * *").next_after(datetime(2026, 1, 1))


# --- IntervalTrigger -----------------------------------------------------------------------


def test_interval_fires_at_the_anchor_then_every_interval() -> None:
    trigger = IntervalTrigger(timedelta(minutes=10), anchor=T0)
    assert trigger.next_after(T0 - timedelta(days=3)) == T0
    assert trigger.next_after(T0) == T0 + timedelta(minutes=10)
    assert trigger.next_after(T0 + timedelta(minutes=10)) == T0 + timedelta(minutes=20)
    assert trigger.next_after(T0 + timedelta(minutes=10, microseconds=-1)) == T0 + timedelta(
        minutes=10
    )


def test_interval_takes_seconds_as_a_number() -> None:
    trigger = IntervalTrigger(90, anchor=T0)
    assert trigger.every == timedelta(seconds=90)
    assert trigger == IntervalTrigger(timedelta(seconds=90), anchor=T0)
    assert trigger.next_after(T0) == T0 + timedelta(seconds=90)
    assert IntervalTrigger(0.25, anchor=T0).next_after(T0) == T0 + timedelta(milliseconds=250)


def test_interval_is_exact_after_millions_of_slots() -> None:
    trigger = IntervalTrigger(timedelta(seconds=7), anchor=T0)
    far = T0 + timedelta(seconds=7 * 5_000_000 + 3)
    assert trigger.next_after(far) == T0 + timedelta(seconds=7 * 5_000_001)


def test_interval_is_elapsed_time_across_dst() -> None:
    # A day-long interval anchored at 09:00 New York time drifts to 10:00 local across
    # the spring-forward: intervals count elapsed time, not wall-clock days.
    anchor = datetime(2026, 3, 7, 9, tzinfo=NEW_YORK)
    trigger = IntervalTrigger(timedelta(days=1), anchor=anchor)
    first = trigger.next_after(anchor)
    assert first is not None
    assert first - anchor == timedelta(hours=24)
    assert first.astimezone(NEW_YORK).hour == 10


def test_interval_anchor_is_kept_in_utc() -> None:
    trigger = IntervalTrigger(60, anchor=datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("Asia/Tokyo")))
    assert trigger.anchor == T0
    assert trigger.anchor.tzinfo is UTC


@pytest.mark.parametrize(
    "every",
    [0, -1, timedelta(0), timedelta(seconds=-5), float("nan"), float("inf"), True, "60", None],
)
def test_interval_must_be_positive(every: object) -> None:
    with pytest.raises(InvalidArgument, match="interval"):
        IntervalTrigger(every, anchor=T0)  # type: ignore[arg-type]


def test_interval_below_a_microsecond_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="interval"):
        IntervalTrigger(1e-9, anchor=T0)


def test_interval_anchor_must_be_aware() -> None:
    with pytest.raises(InvalidArgument, match="anchor"):
        IntervalTrigger(60, anchor=datetime(2026, 1, 1))


def test_interval_ends_at_the_end_of_the_calendar() -> None:
    trigger = IntervalTrigger(timedelta(days=365), anchor=T0)
    assert trigger.next_after(datetime(9999, 12, 1, tzinfo=UTC)) is None


# --- OnceTrigger ---------------------------------------------------------------------------


def test_once_fires_once() -> None:
    trigger = OnceTrigger(T0)
    assert trigger.next_after(T0 - timedelta(microseconds=1)) == T0
    assert trigger.next_after(T0) is None
    assert trigger.next_after(T0 + timedelta(days=1)) is None


def test_once_needs_an_aware_instant() -> None:
    with pytest.raises(InvalidArgument, match="at"):
        OnceTrigger(datetime(2026, 1, 1))
    assert OnceTrigger(datetime(2026, 1, 1, 1, tzinfo=ZoneInfo("Europe/Berlin"))).at == T0


# --- the protocol, fire_times, describe ----------------------------------------------------


def test_every_trigger_satisfies_the_protocol() -> None:
    triggers: list[Trigger] = [CronTrigger("* * * * *"), IntervalTrigger(1, T0), OnceTrigger(T0)]
    for trigger in triggers:
        fire = trigger.next_after(T0 - timedelta(seconds=1))
        assert fire is not None
        assert fire.tzinfo is UTC


def test_fire_times_lists_fires_in_the_half_open_range() -> None:
    trigger = CronTrigger("0 * * * *")
    assert fire_times(trigger, T0, T0 + timedelta(hours=3), limit=10) == [
        T0 + timedelta(hours=1),
        T0 + timedelta(hours=2),
        T0 + timedelta(hours=3),  # `until` is included
    ]


def test_fire_times_stops_at_the_limit() -> None:
    trigger = IntervalTrigger(1, anchor=T0)
    assert len(fire_times(trigger, T0, T0 + timedelta(days=1), limit=5)) == 5


def test_fire_times_stops_when_the_trigger_is_done() -> None:
    assert fire_times(OnceTrigger(T0), T0 - timedelta(1), T0 + timedelta(1), limit=5) == [T0]


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_fire_times_limit_must_be_positive(limit: object) -> None:
    with pytest.raises(InvalidArgument, match="limit"):
        fire_times(OnceTrigger(T0), T0, T0, limit=limit)  # type: ignore[arg-type]


def test_fire_times_takes_the_calendar_edges_in_any_zone_as_no_bound() -> None:
    tokyo, new_york = ZoneInfo("Asia/Tokyo"), NEW_YORK
    no_end = datetime.max.replace(tzinfo=new_york)  # has no UTC equivalent
    assert fire_times(CronTrigger("0 * * * *"), T0, no_end, limit=2) == [
        T0 + timedelta(hours=1),
        T0 + timedelta(hours=2),
    ]
    no_start = datetime.min.replace(tzinfo=tokyo)
    for trigger in (CronTrigger("0 0 1 1 *"), IntervalTrigger(60, T0), OnceTrigger(T0)):
        assert fire_times(trigger, no_start, T0, limit=1) == [
            trigger.next_after(datetime(1, 1, 2, tzinfo=UTC))
        ]


def test_fire_times_refuses_naive_bounds() -> None:
    with pytest.raises(InvalidArgument, match="until"):
        fire_times(OnceTrigger(T0), T0, datetime(2026, 1, 2), limit=1)


@pytest.mark.parametrize(
    ("trigger", "text"),
    [
        (CronTrigger("0 2 * * *", "Europe/Berlin"), "cron '0 2 * * *' in Europe/Berlin"),
        (CronTrigger("@hourly"), "cron '@hourly' in UTC"),
        (
            IntervalTrigger(timedelta(hours=1, minutes=30), T0),
            "every 1h 30m from 2026-01-01T00:00:00+00:00",
        ),
        (IntervalTrigger(timedelta(days=2), T0), "every 2d from 2026-01-01T00:00:00+00:00"),
        (IntervalTrigger(0.25, T0), "every 0.25s from 2026-01-01T00:00:00+00:00"),
        (IntervalTrigger(61.5, T0), "every 1m 1.5s from 2026-01-01T00:00:00+00:00"),
        (OnceTrigger(T0), "once at 2026-01-01T00:00:00+00:00"),
    ],
)
def test_describe(trigger: Trigger, text: str) -> None:
    assert describe(trigger) == text


def test_describe_falls_back_to_repr_for_other_triggers() -> None:
    @dataclasses.dataclass(frozen=True)
    class Never:
        def next_after(self, after: datetime) -> datetime | None:
            return None

    assert (
        describe(Never()) == "test_describe_falls_back_to_repr_for_other_triggers.<locals>.Never()"
    )
