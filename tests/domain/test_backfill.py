"""Backfill slots come from the schedule's own trigger: its zone and DST rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rota.domain.backfill import (
    CONFIRM_ABOVE,
    MAX_BACKFILL_SLOTS,
    BackfillRequest,
    plan_backfill,
)
from rota.domain.triggers import CronTrigger, IntervalTrigger
from rota.errors import InvalidArgument

BERLIN = ZoneInfo("Europe/Berlin")
HOURLY = CronTrigger("0 * * * *", "Europe/Berlin")


def week(start_day: datetime) -> BackfillRequest:
    return BackfillRequest(start_day, start_day + timedelta(days=7))


def berlin(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=BERLIN)  # type: ignore[misc]


def test_a_week_of_hours_across_autumns_change_has_169_slots() -> None:
    # Berlin's clocks go back at 03:00 on 2026-10-25: that day has 25 hours.
    plan = plan_backfill(HOURLY, BackfillRequest(berlin(2026, 10, 19), berlin(2026, 10, 26)))
    assert plan.total == len(plan.slots) == 169
    assert plan.slots[0] == berlin(2026, 10, 19).astimezone(UTC)
    assert plan.slots[-1] == berlin(2026, 10, 25, 23).astimezone(UTC)
    assert all(
        b - a == timedelta(hours=1) for a, b in zip(plan.slots, plan.slots[1:], strict=False)
    )
    two_oclock = [s for s in plan.slots if s.astimezone(BERLIN).date().day == 25]
    assert len(two_oclock) == 25  # 02:00 CEST and 02:00 CET both fire (interval-like)


def test_a_week_of_hours_across_springs_change_has_167_slots() -> None:
    # Berlin's clocks go forward at 02:00 on 2026-03-29: that day has 23 hours.
    plan = plan_backfill(HOURLY, BackfillRequest(berlin(2026, 3, 23), berlin(2026, 3, 30)))
    assert plan.total == 167
    assert berlin(2026, 3, 29, 3).astimezone(UTC) in plan.slots
    assert plan.next_from is None


def test_a_daily_wall_clock_cron_fires_once_a_day_across_the_change() -> None:
    daily = CronTrigger("30 2 * * *", "Europe/Berlin")  # 02:30 is skipped on 03-29
    plan = plan_backfill(daily, week(berlin(2026, 3, 23)))
    assert plan.total == 7


def test_the_range_includes_from_and_excludes_to() -> None:
    plan = plan_backfill(HOURLY, BackfillRequest(berlin(2026, 6, 1, 5), berlin(2026, 6, 1, 8)))
    assert [s.astimezone(BERLIN).hour for s in plan.slots] == [5, 6, 7]


def test_limit_hands_out_a_chunk_and_where_the_rest_begins() -> None:
    start = berlin(2026, 6, 1)
    plan = plan_backfill(HOURLY, BackfillRequest(start, start + timedelta(hours=10), limit=4))
    assert (len(plan.slots), plan.total) == (4, 10)
    assert plan.next_from == (start + timedelta(hours=4)).astimezone(UTC)


def test_interval_slots_follow_the_anchor() -> None:
    anchor = datetime(2026, 1, 1, 0, 7, tzinfo=UTC)
    trigger = IntervalTrigger(timedelta(minutes=30), anchor)
    plan = plan_backfill(trigger, BackfillRequest(anchor, anchor + timedelta(hours=2)))
    assert [s.minute for s in plan.slots] == [7, 37, 7, 37]


def test_a_reversed_or_empty_range_is_refused_naming_it() -> None:
    with pytest.raises(InvalidArgument, match=r"range.*from before to"):
        BackfillRequest(berlin(2026, 6, 2), berlin(2026, 6, 1))
    with pytest.raises(InvalidArgument, match="range"):
        BackfillRequest(berlin(2026, 6, 1), berlin(2026, 6, 1))
    with pytest.raises(InvalidArgument, match="from"):
        BackfillRequest(datetime(2026, 6, 1), berlin(2026, 6, 2))  # naive
    with pytest.raises(InvalidArgument, match="max_in_flight"):
        BackfillRequest(berlin(2026, 6, 1), berlin(2026, 6, 2), max_in_flight=0)


def test_many_slots_need_confirmation_and_too_many_are_refused() -> None:
    minutely = CronTrigger("* * * * *", "UTC")
    start = datetime(2026, 6, 1, tzinfo=UTC)
    over = BackfillRequest(start, start + timedelta(minutes=CONFIRM_ABOVE + 1))
    with pytest.raises(InvalidArgument, match=f"slot count: {CONFIRM_ABOVE + 1}.*--yes"):
        plan_backfill(minutely, over)
    confirmed = BackfillRequest(over.start, over.end, confirm=True)
    assert plan_backfill(minutely, confirmed).total == CONFIRM_ABOVE + 1
    huge = BackfillRequest(start, start + timedelta(days=30), confirm=True)
    with pytest.raises(InvalidArgument, match=f"at most {MAX_BACKFILL_SLOTS} slots"):
        plan_backfill(minutely, huge)
