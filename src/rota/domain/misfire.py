"""What the planner does with slots it missed, with runs that would overlap, and jitter.

All pure: every function takes the instants it reasons about and returns a value.
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from rota.domain.triggers import Trigger
from rota.domain.values import require_aware
from rota.errors import InvalidArgument

# Counting slots nobody will run is bookkeeping; after a long outage of a dense schedule
# it must not hold up planning (or the leader's lease), so counting stops here.
MAX_COUNTED_SKIPS = 10_000
# One planning pass creates at most this many upcoming runs; the rest come next pass.
MAX_PLANNED_SLOTS = 10_000
_TICK = timedelta(microseconds=1)  # datetime's resolution: `s < now` is `s <= now - _TICK`


class MisfirePolicy(StrEnum):
    """What to do with slots missed within the catch-up window."""

    FIRE_NOW = "fire_now"  # one run, for the latest missed slot
    SKIP = "skip"  # none
    RUN_ALL = "run_all"  # one run per missed slot, the most recent run_all_cap of them


class OverlapPolicy(StrEnum):
    """What to do when a slot comes due while earlier runs of the schedule are not done."""

    ALLOW = "allow"  # always create the run
    SKIP = "skip"  # create it only if no run is active
    BUFFER_ONE = "buffer_one"  # create it only if no run is already waiting


class OverlapDecision(StrEnum):
    CREATE = "create"
    SKIP = "skip"


@dataclass(frozen=True)
class SlotPlan:
    """The planner's decision for one schedule.

    ``slots``: instants to create runs for, ascending; catch-up slots (before ``now``)
    come first. ``next_cursor``: every slot at or before it has been decided; it is the
    last slot considered, or the cursor unchanged when there was none. ``skipped``:
    slots decided not to run (too old, or dropped by the policy); exact up to
    :data:`MAX_COUNTED_SKIPS` per region, a lower bound beyond it.
    """

    slots: tuple[datetime, ...]
    next_cursor: datetime
    skipped: int


def plan_due_slots(
    trigger: Trigger,
    cursor: datetime,
    now: datetime,
    horizon: timedelta,
    misfire: MisfirePolicy,
    catch_up_window: timedelta,
    run_all_cap: int,
) -> SlotPlan:
    """Decide which slots after ``cursor`` get runs.

    ``cursor`` is the last slot already planned (or the schedule's creation time).
    Regions, by slot instant ``s``:

    * ``cursor < s <= now - catch_up_window`` and ``s < now``: too old, skipped.
    * ``now - catch_up_window < s < now``: missed; handled by ``misfire``.
    * ``now <= s <= now + horizon``: planned, whatever the policy.
    """
    cursor = require_aware(cursor, "cursor")
    now = require_aware(now, "now")
    _non_negative("horizon", horizon)
    _non_negative("catch-up window", catch_up_window)
    policy = _misfire_policy(misfire)
    if isinstance(run_all_cap, bool) or not isinstance(run_all_cap, int) or run_all_cap < 1:
        raise InvalidArgument("run_all_cap", run_all_cap, "an int >= 1")

    last_missed = now - _TICK
    too_old_until = min(_shifted(now, -catch_up_window), last_missed)
    too_old, last_too_old = _count_slots(trigger, cursor, too_old_until)
    missed_after = max(cursor, too_old_until)
    missed, missed_count = _missed_slots(trigger, missed_after, last_missed, policy, run_all_cap)
    plan_until = _shifted(now, horizon)
    upcoming = _collect(trigger, max(cursor, last_missed), plan_until, MAX_PLANNED_SLOTS)

    catch_up = () if policy is MisfirePolicy.SKIP else missed
    considered = (*missed, *upcoming) or ((last_too_old,) if last_too_old else ())
    return SlotPlan(
        slots=(*catch_up, *upcoming),
        next_cursor=considered[-1] if considered else cursor,
        # RUN_ALL's cap may exceed what was counted after a very long outage.
        skipped=too_old + max(missed_count - len(catch_up), 0),
    )


def _count_slots(trigger: Trigger, after: datetime, until: datetime) -> tuple[int, datetime | None]:
    """How many slots lie in (after, until] (counting stops at the cap), and the last one.

    When counting stops early the boundary ``until`` stands in for the last slot: every
    slot up to it is decided (skipped) even though not every one was counted.
    """
    count, last = 0, None
    instant = trigger.next_after(after) if after < until else None
    while instant is not None and instant <= until:
        if count == MAX_COUNTED_SKIPS:
            return count, until
        count, last = count + 1, instant
        instant = trigger.next_after(instant)
    return count, last


def _missed_slots(
    trigger: Trigger, after: datetime, until: datetime, policy: MisfirePolicy, cap: int
) -> tuple[tuple[datetime, ...], int]:
    """The most recent missed slots in (after, until] the policy may run, and the count.

    Even SKIP needs the latest one: it becomes the next cursor.
    """
    keep = cap if policy is MisfirePolicy.RUN_ALL else 1
    latest: deque[datetime] = deque(maxlen=keep)
    count = 0
    instant = trigger.next_after(after) if after < until else None
    while instant is not None and instant <= until:
        if count == MAX_COUNTED_SKIPS:
            # Too many to walk: find the most recent ones by looking back from `until`.
            return _latest_slots(trigger, after, until, keep), count
        count += 1
        latest.append(instant)
        instant = trigger.next_after(instant)
    return tuple(latest), count


def _latest_slots(
    trigger: Trigger, after: datetime, until: datetime, keep: int
) -> tuple[datetime, ...]:
    """The last ``keep`` slots in (after, until], in a window that doubles back from
    ``until``: triggers only step forward, so this is how to look backward in bounded work.
    """
    width = timedelta(seconds=1)
    while True:
        start = after if width >= until - after else until - width
        found = _collect(trigger, start, until, limit=None)
        if len(found) >= keep or start == after:
            return tuple(found[-keep:])
        width *= 2


def _collect(
    trigger: Trigger, after: datetime, until: datetime, limit: int | None
) -> tuple[datetime, ...]:
    found: list[datetime] = []
    instant = trigger.next_after(after) if after < until else None
    while instant is not None and instant <= until and (limit is None or len(found) < limit):
        found.append(instant)
        instant = trigger.next_after(instant)
    return tuple(found)


def _shifted(instant: datetime, delta: timedelta) -> datetime:
    """``instant + delta``, clamped to datetime's range: a window of a million days
    means "everything", not an OverflowError."""
    try:
        return instant + delta
    except OverflowError:
        edge = datetime.max if delta > timedelta(0) else datetime.min
        return edge.replace(tzinfo=UTC)


def _non_negative(name: str, value: timedelta) -> None:
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise InvalidArgument(name, value, "a timedelta >= 0")


def _misfire_policy(value: str) -> MisfirePolicy:
    try:
        return MisfirePolicy(value)
    except ValueError:
        allowed = ", ".join(policy.value for policy in MisfirePolicy)
        raise InvalidArgument("misfire policy", value, f"one of {allowed}") from None


def overlap_decision(
    policy: OverlapPolicy, active_runs: int, buffered_runs: int
) -> OverlapDecision:
    """Whether a due slot gets a run, given this schedule's unfinished runs.

    ``active_runs``: runs started and not finished. ``buffered_runs``: runs created but
    not started yet. SKIP creates only when neither exists: a created run that has not
    started yet would overlap the new one just as a running one would.
    """
    for name, count in (("active_runs", active_runs), ("buffered_runs", buffered_runs)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidArgument(name, count, "an int >= 0")
    try:
        policy = OverlapPolicy(policy)
    except ValueError:
        allowed = ", ".join(option.value for option in OverlapPolicy)
        raise InvalidArgument("overlap policy", policy, f"one of {allowed}") from None
    create = {
        OverlapPolicy.ALLOW: True,
        OverlapPolicy.SKIP: active_runs == 0 and buffered_runs == 0,
        OverlapPolicy.BUFFER_ONE: buffered_runs == 0,
    }[policy]
    return OverlapDecision.CREATE if create else OverlapDecision.SKIP


def jittered(slot: datetime, jitter_seconds: float, key: str) -> datetime:
    """``slot`` plus a delay in [0, jitter_seconds), the same on every node.

    The delay comes from a hash of (key, slot), not from a random generator, so every
    planner computes the same start instant for a slot without coordinating.
    """
    slot = require_aware(slot, "slot")
    if (
        isinstance(jitter_seconds, bool)
        or not isinstance(jitter_seconds, int | float)
        or not math.isfinite(jitter_seconds)
        or jitter_seconds < 0
    ):
        raise InvalidArgument("jitter seconds", jitter_seconds, "a finite number >= 0")
    if not isinstance(key, str):
        raise InvalidArgument("jitter key", key, "a string (the schedule's key)")
    # Whole microseconds strictly below the bound: the delay never reaches jitter_seconds.
    span = math.floor(jitter_seconds * 1_000_000)
    if span == 0:
        return slot
    digest = hashlib.sha256(f"{key}\x00{slot.isoformat()}".encode()).digest()
    return slot + timedelta(microseconds=int.from_bytes(digest[:8], "big") % span)
