"""Misfire planning, overlap decisions and deterministic jitter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rota.domain.misfire import (
    MAX_COUNTED_SKIPS,
    MisfirePolicy,
    OverlapDecision,
    OverlapPolicy,
    SlotPlan,
    jittered,
    overlap_decision,
    plan_due_slots,
)
from rota.domain.triggers import CronTrigger, IntervalTrigger, OnceTrigger, Trigger
from rota.errors import InvalidArgument

EVERY_5_MINUTES = CronTrigger("*/5 * * * *")
FIVE_MINUTES = timedelta(minutes=5)
HALF_HOUR = timedelta(minutes=30)


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(2026, 1, 1, hour, minute, second, tzinfo=UTC)


def minutes(value: float) -> timedelta:
    return timedelta(minutes=value)


def plan(
    now: datetime,
    cursor: datetime,
    misfire: MisfirePolicy,
    *,
    trigger: Trigger = EVERY_5_MINUTES,
    horizon: timedelta = FIVE_MINUTES,
    window: timedelta = HALF_HOUR,
    cap: int = 100,
) -> SlotPlan:
    return plan_due_slots(trigger, cursor, now, horizon, misfire, window, cap)


# --- one planning pass after a one-hour outage ---------------------------------------------
# Last planned slot 10:00; back at 11:00:30 with a 30-minute catch-up window.
# Too old: 10:05-10:30 (6). Missed: 10:35-11:00 (6). Upcoming within 5 minutes: 11:05.


def test_fire_now_runs_the_latest_missed_slot_once() -> None:
    result = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.FIRE_NOW)
    assert result == SlotPlan(slots=(at(11, 0), at(11, 5)), next_cursor=at(11, 5), skipped=11)


def test_skip_runs_no_missed_slot() -> None:
    result = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.SKIP)
    assert result == SlotPlan(slots=(at(11, 5),), next_cursor=at(11, 5), skipped=12)


def test_run_all_runs_every_missed_slot_in_the_window() -> None:
    result = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.RUN_ALL)
    missed = tuple(at(10, 35) + minutes(5 * k) for k in range(6))
    assert result == SlotPlan(slots=(*missed, at(11, 5)), next_cursor=at(11, 5), skipped=6)


def test_run_all_keeps_the_most_recent_slots_up_to_the_cap() -> None:
    result = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.RUN_ALL, cap=3)
    assert result == SlotPlan(
        slots=(at(10, 50), at(10, 55), at(11, 0), at(11, 5)), next_cursor=at(11, 5), skipped=9
    )


def test_policies_accept_their_string_values() -> None:
    assert plan(at(11, 0, 30), at(10, 0), "skip").skipped == 12  # type: ignore[arg-type]


# --- a planner loop through the outage -----------------------------------------------------


def simulate_outage(policy: MisfirePolicy) -> tuple[list[datetime], int]:
    """Plan every 30 s from 09:00 to 11:30, with the planner down from 10:00 to 11:00:30."""
    cursor, now = at(9, 0), at(9, 0)
    planned: list[datetime] = []
    skipped = 0
    while now <= at(11, 30):
        if not at(10, 0) < now < at(11, 0, 30):
            result = plan(now, cursor, policy, horizon=minutes(1), cap=3)
            planned.extend(result.slots)
            skipped += result.skipped
            cursor = result.next_cursor
        now += timedelta(seconds=30)
    assert len(planned) == len(set(planned)), "a slot was planned twice"
    assert planned == sorted(planned)
    return planned, skipped


BEFORE = [at(9, 5) + minutes(5 * k) for k in range(12)]  # 09:05 .. 10:00
AFTER = [at(11, 5) + minutes(5 * k) for k in range(6)]  # 11:05 .. 11:30


@pytest.mark.parametrize(
    ("policy", "caught_up", "skipped"),
    [
        (MisfirePolicy.FIRE_NOW, [at(11, 0)], 11),
        (MisfirePolicy.SKIP, [], 12),
        (MisfirePolicy.RUN_ALL, [at(10, 50), at(10, 55), at(11, 0)], 9),
    ],
)
def test_one_hour_outage(policy: MisfirePolicy, caught_up: list[datetime], skipped: int) -> None:
    planned, total_skipped = simulate_outage(policy)
    assert planned == [*BEFORE, *caught_up, *AFTER]
    assert total_skipped == skipped


# --- boundaries ----------------------------------------------------------------------------


def test_a_slot_exactly_at_now_is_planned_not_missed() -> None:
    result = plan(at(11, 0), at(10, 55), MisfirePolicy.SKIP, horizon=timedelta(0))
    assert result == SlotPlan(slots=(at(11, 0),), next_cursor=at(11, 0), skipped=0)


def test_a_slot_exactly_at_the_window_edge_is_too_old() -> None:
    result = plan(at(11, 0), at(10, 25), MisfirePolicy.RUN_ALL, horizon=timedelta(0))
    # 10:30 == now - window: too old. 10:35 .. 10:55 missed, run. 11:00 upcoming.
    assert result.slots == (at(10, 35), at(10, 40), at(10, 45), at(10, 50), at(10, 55), at(11, 0))
    assert result.skipped == 1


def test_a_zero_window_catches_nothing_up() -> None:
    result = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.FIRE_NOW, window=timedelta(0))
    assert result == SlotPlan(slots=(at(11, 5),), next_cursor=at(11, 5), skipped=12)


def test_steady_state_plans_each_slot_once() -> None:
    first = plan(at(11, 0, 30), at(11, 0), MisfirePolicy.FIRE_NOW, horizon=minutes(12))
    assert first.slots == (at(11, 5), at(11, 10))
    again = plan(at(11, 1), first.next_cursor, MisfirePolicy.FIRE_NOW, horizon=minutes(12))
    assert again == SlotPlan(slots=(), next_cursor=at(11, 10), skipped=0)


def test_cursor_stays_when_nothing_was_considered() -> None:
    result = plan(at(11, 0), at(12, 0), MisfirePolicy.RUN_ALL)
    assert result == SlotPlan(slots=(), next_cursor=at(12, 0), skipped=0)
    finished = plan(at(11, 0), at(9, 0), MisfirePolicy.RUN_ALL, trigger=OnceTrigger(at(8, 0)))
    assert finished == SlotPlan(slots=(), next_cursor=at(9, 0), skipped=0)


def test_cursor_moves_past_slots_that_were_only_skipped() -> None:
    result = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.SKIP, horizon=timedelta(0))
    assert result == SlotPlan(slots=(), next_cursor=at(11, 0), skipped=12)
    too_old_only = plan(at(11, 0, 30), at(10, 0), MisfirePolicy.SKIP, window=timedelta(0))
    assert too_old_only.next_cursor == at(11, 5)
    only_old = plan(
        at(11, 0, 30),
        at(10, 0),
        MisfirePolicy.SKIP,
        trigger=OnceTrigger(at(10, 10)),
        window=timedelta(0),
    )
    assert only_old == SlotPlan(slots=(), next_cursor=at(10, 10), skipped=1)


def test_a_missed_one_off_run_fires_now() -> None:
    result = plan(at(11, 0), at(9, 0), MisfirePolicy.FIRE_NOW, trigger=OnceTrigger(at(10, 50)))
    assert result == SlotPlan(slots=(at(10, 50),), next_cursor=at(10, 50), skipped=0)


def test_a_week_long_outage_of_a_per_second_schedule_is_planned_in_bounded_work() -> None:
    now = at(12, 0)
    trigger = IntervalTrigger(1, anchor=now - timedelta(days=8))
    result = plan_due_slots(
        trigger,
        cursor=now - timedelta(days=7),
        now=now,
        horizon=timedelta(seconds=2),
        misfire=MisfirePolicy.RUN_ALL,
        catch_up_window=timedelta(days=1),
        run_all_cap=3,
    )
    assert result.slots == tuple(now + timedelta(seconds=k) for k in (-3, -2, -1, 0, 1, 2))
    assert result.next_cursor == now + timedelta(seconds=2)
    assert result.skipped >= MAX_COUNTED_SKIPS  # counting stops; the decision does not


def test_fire_now_after_a_long_dense_outage_still_finds_the_latest_slot() -> None:
    now = at(12, 0)
    result = plan_due_slots(
        IntervalTrigger(timedelta(milliseconds=250), anchor=now - timedelta(days=1)),
        cursor=now - timedelta(days=1),
        now=now,
        horizon=timedelta(0),
        misfire=MisfirePolicy.FIRE_NOW,
        catch_up_window=timedelta(hours=6),
        run_all_cap=1,
    )
    assert result.slots == (now - timedelta(milliseconds=250), now)


def test_huge_windows_mean_everything_not_an_overflow() -> None:
    result = plan(
        at(11, 0, 30),
        at(10, 0),
        MisfirePolicy.RUN_ALL,
        horizon=timedelta(days=999_999_999),
        window=timedelta(days=999_999_999),
        trigger=OnceTrigger(at(10, 10)),
    )
    assert result == SlotPlan(slots=(at(10, 10),), next_cursor=at(10, 10), skipped=0)


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"cursor": datetime(2026, 1, 1)}, "cursor"),
        ({"now": datetime(2026, 1, 1)}, "now"),
        ({"horizon": timedelta(seconds=-1)}, "horizon"),
        ({"horizon": 60}, "horizon"),
        ({"catch_up_window": timedelta(seconds=-1)}, "catch-up window"),
        ({"run_all_cap": 0}, "run_all_cap"),
        ({"run_all_cap": True}, "run_all_cap"),
        ({"run_all_cap": 2.0}, "run_all_cap"),
        ({"misfire": "later"}, "misfire policy"),
    ],
)
def test_plan_validates_its_inputs(changes: dict[str, object], name: str) -> None:
    arguments: dict[str, object] = {
        "trigger": EVERY_5_MINUTES,
        "cursor": at(10, 0),
        "now": at(11, 0),
        "horizon": minutes(5),
        "misfire": MisfirePolicy.SKIP,
        "catch_up_window": minutes(30),
        "run_all_cap": 10,
    }
    arguments.update(changes)
    with pytest.raises(InvalidArgument) as caught:
        plan_due_slots(**arguments)  # type: ignore[arg-type]
    assert caught.value.name == name


# --- overlap -------------------------------------------------------------------------------

CREATE, SKIP = OverlapDecision.CREATE, OverlapDecision.SKIP


@pytest.mark.parametrize(
    ("policy", "active", "buffered", "decision"),
    [
        (OverlapPolicy.ALLOW, 0, 0, CREATE),
        (OverlapPolicy.ALLOW, 3, 2, CREATE),
        (OverlapPolicy.SKIP, 0, 0, CREATE),
        (OverlapPolicy.SKIP, 1, 0, SKIP),
        (OverlapPolicy.SKIP, 0, 1, SKIP),  # created, not started: it would overlap too
        (OverlapPolicy.BUFFER_ONE, 0, 0, CREATE),
        (OverlapPolicy.BUFFER_ONE, 1, 0, CREATE),  # becomes the one waiting
        (OverlapPolicy.BUFFER_ONE, 1, 1, SKIP),
        (OverlapPolicy.BUFFER_ONE, 0, 1, SKIP),
    ],
)
def test_overlap_decision(
    policy: OverlapPolicy, active: int, buffered: int, decision: OverlapDecision
) -> None:
    assert overlap_decision(policy, active, buffered) is decision


def test_overlap_decision_validates() -> None:
    with pytest.raises(InvalidArgument, match="active_runs"):
        overlap_decision(OverlapPolicy.ALLOW, -1, 0)
    with pytest.raises(InvalidArgument, match="buffered_runs"):
        overlap_decision(OverlapPolicy.ALLOW, 0, True)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="overlap policy"):
        overlap_decision("queue", 0, 0)  # type: ignore[arg-type]
    assert overlap_decision("skip", 1, 0) is SKIP  # type: ignore[arg-type]


# --- jitter --------------------------------------------------------------------------------


def test_jitter_is_the_same_for_the_same_schedule_and_slot() -> None:
    slot = at(10, 0)
    assert jittered(slot, 30, "nightly-report") == jittered(slot, 30, "nightly-report")
    # The same instant written in another zone is the same slot.
    berlin = slot.astimezone(ZoneInfo("Europe/Berlin"))
    assert jittered(berlin, 30, "nightly-report") == jittered(slot, 30, "nightly-report")


def test_jitter_stays_in_range_and_spreads() -> None:
    slots = [at(0, 0) + minutes(k) for k in range(500)]
    delays = [jittered(slot, 10, "key") - slot for slot in slots]
    assert all(timedelta(0) <= delay < timedelta(seconds=10) for delay in delays)
    assert len(set(delays)) > 490
    assert min(delays) < timedelta(seconds=1)
    assert max(delays) > timedelta(seconds=9)


def test_jitter_differs_between_schedules() -> None:
    keys = [f"schedule-{k}" for k in range(50)]
    assert len({jittered(at(10, 0), 60, key) for key in keys}) > 45


def test_jitter_never_reaches_its_bound() -> None:
    # One microsecond of jitter allows exactly one delay: zero.
    assert {jittered(at(0, 0) + minutes(k), 1e-6, "k") for k in range(5)} == {
        at(0, 0) + minutes(k) for k in range(5)
    }


@pytest.mark.parametrize("jitter", [0, 0.0, 1e-9])
def test_no_jitter_keeps_the_slot(jitter: float) -> None:
    assert jittered(at(10, 0), jitter, "key") == at(10, 0)


def test_jitter_answers_in_utc() -> None:
    result = jittered(at(10, 0).astimezone(ZoneInfo("Asia/Tokyo")), 5, "key")
    assert result.tzinfo is UTC


@pytest.mark.parametrize("jitter", [-1, float("nan"), float("inf"), True, "5"])
def test_jitter_seconds_are_validated(jitter: object) -> None:
    with pytest.raises(InvalidArgument, match="jitter seconds"):
        jittered(at(10, 0), jitter, "key")  # type: ignore[arg-type]


def test_jitter_needs_an_aware_slot_and_a_string_key() -> None:
    with pytest.raises(InvalidArgument, match="slot"):
        jittered(datetime(2026, 1, 1), 5, "key")
    with pytest.raises(InvalidArgument, match="jitter key"):
        jittered(at(10, 0), 5, 42)  # type: ignore[arg-type]
