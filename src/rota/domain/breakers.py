"""Circuit breakers, cluster-wide, per handler and optionally per ``breaker_key``.

closed --N failures in a row (within ``window`` s)--> open --``cool_down`` s--> half_open
closed --a failure rate over ``window`` s (at least ``min_calls`` outcomes)--> open
half_open lets ``probes`` runs through: a probe's success closes it, a failure reopens.
While it is not closed, runs wait (``when_open="wait"``) or fail at once ("fail").

The store keeps one row per (handler, breaker_key) and calls these pure rules in two
places only: the completion that records an attempt's outcome (:func:`on_outcome`, in
the same transaction) and the serialised limited claim (:meth:`BreakerView.allows` /
:meth:`BreakerView.take`). Every change of state is returned as a :class:`Transition`
for the store to record (ADR 0016).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from rota.domain.states import AttemptOutcome
from rota.errors import InvalidArgument

MICROS = 1_000_000


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class WhenOpen(StrEnum):
    WAIT = "wait"  # runs stay pending, spending no attempt, until it lets them through
    FAIL = "fail"  # runs end Failed at once, without an attempt, with the reason recorded


@dataclass(frozen=True)
class Breaker:
    """``failures`` consecutive failures within ``window`` seconds open it, and so does
    (with ``failure_rate``) a share of failed outcomes at or over ``failure_rate`` among
    at least ``min_calls`` outcomes in the current ``window``; after ``cool_down``
    seconds ``probes`` runs may try; a probe's success closes it. With neither
    ``failures`` nor ``failure_rate`` given, ``failures`` is 5; with only
    ``failure_rate``, only the rate opens it."""

    failures: int | None = None
    window: float = 60.0
    cool_down: float = 30.0
    probes: int = 1
    failure_rate: float | None = None
    min_calls: int = 20
    when_open: WhenOpen | Literal["wait", "fail"] = WhenOpen.WAIT

    def __post_init__(self) -> None:
        if self.failures is None and self.failure_rate is None:
            object.__setattr__(self, "failures", 5)
        for name in ("failures", "probes", "min_calls"):
            value = getattr(self, name)
            if name == "failures" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
                raise InvalidArgument(f"breaker {name}", value, "an integer 1-10000")
        rate = self.failure_rate
        if rate is not None and (
            isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1
        ):
            raise InvalidArgument("breaker failure_rate", rate, "a share > 0 and <= 1")
        try:
            object.__setattr__(self, "when_open", WhenOpen(self.when_open))
        except ValueError:
            allowed = "one of " + ", ".join(w.value for w in WhenOpen)
            raise InvalidArgument("breaker when_open", self.when_open, allowed) from None
        for name in ("window", "cool_down"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidArgument(f"breaker {name}", value, "a number of seconds")
            if not 0 <= value <= 86_400 or (name == "window" and value == 0):
                allowed = "seconds, > 0 and <= 86400" if name == "window" else "0-86400 seconds"
                raise InvalidArgument(f"breaker {name}", value, allowed)


@dataclass(frozen=True)
class BreakerRow:
    handler: str
    key: str  # "" when runs carry no breaker_key
    state: BreakerState = BreakerState.CLOSED
    failures: int = 0  # consecutive failures in the current streak
    streak_started_at: int | None = None  # micros
    opened_at: int | None = None  # micros: when it (re)opened or went half-open
    probes_left: int = 0
    cause: str | None = None
    # The failure-rate window (a tumbling window of ``window`` seconds, closed only).
    window_started_at: int | None = None  # micros
    window_calls: int = 0
    window_failures: int = 0


def as_of(row: BreakerRow, rule: Breaker | None, now: int) -> BreakerRow:
    """``row`` as an operator should read it at ``now``: a failure-rate window that has
    passed counts nothing any more (the next outcome starts a new one), so its counts
    and start are cleared; without a rate (or a rule) there is no window."""
    started = row.window_started_at
    if rule is None or rule.failure_rate is None or started is None:
        passed = True
    else:
        passed = now - started >= int(rule.window * MICROS)
    if passed:
        return replace(row, window_started_at=None, window_calls=0, window_failures=0)
    return row


@dataclass(frozen=True)
class Transition:
    handler: str
    key: str
    from_state: BreakerState
    to_state: BreakerState
    at: int  # micros
    cause: str


def _move(
    row: BreakerRow, to: BreakerState, now: int, cause: str, **fields: object
) -> tuple[BreakerRow, Transition]:
    moved = replace(row, state=to, cause=cause, **fields)  # type: ignore[arg-type]
    return moved, Transition(row.handler, row.key, row.state, to, now, cause)


def is_failure(outcome: AttemptOutcome) -> bool | None:
    """True for the handler's failures, False for a success, None for what says
    nothing about the dependency (a cancel, a lost lease, the database being down)."""
    if outcome is AttemptOutcome.SUCCEEDED:
        return False
    if outcome in (AttemptOutcome.FAILED, AttemptOutcome.TIMED_OUT):
        return True
    return None


def on_outcome(
    row: BreakerRow, rule: Breaker, failed: bool, now: int
) -> tuple[BreakerRow, Transition | None]:
    """The breaker after one attempt's outcome (recorded with that outcome)."""
    fresh_window = {"window_started_at": None, "window_calls": 0, "window_failures": 0}
    if not failed:
        if row.state is BreakerState.CLOSED:
            counted = _count(row, rule, failed, now)
            return replace(counted, failures=0, streak_started_at=None), None
        cleared = {"failures": 0, "streak_started_at": None, "opened_at": None, "probes_left": 0}
        return _move(row, BreakerState.CLOSED, now, "a probe succeeded", **cleared, **fresh_window)
    if row.state is BreakerState.HALF_OPEN:
        return _move(row, BreakerState.OPEN, now, "a probe failed", opened_at=now, probes_left=0)
    if row.state is BreakerState.OPEN:
        return row, None  # a run claimed before it opened: already open
    counted = _count(row, rule, failed, now)
    window = int(rule.window * MICROS)
    fresh = row.streak_started_at is None or now - row.streak_started_at > window
    started = now if fresh else row.streak_started_at
    failures = 1 if fresh else row.failures + 1
    streak = replace(counted, failures=failures, streak_started_at=started)
    cause = trip_cause(streak, rule)
    if cause is None:
        return streak, None
    return _move(streak, BreakerState.OPEN, now, cause, opened_at=now, **fresh_window)


def _count(row: BreakerRow, rule: Breaker, failed: bool, now: int) -> BreakerRow:
    """Count one outcome in the failure-rate window (a new window once it has passed)."""
    if rule.failure_rate is None:
        return row
    started = row.window_started_at
    if started is None or now - started >= int(rule.window * MICROS):
        row = replace(row, window_started_at=now, window_calls=0, window_failures=0)
    return replace(
        row,
        window_calls=row.window_calls + 1,
        window_failures=row.window_failures + int(failed),
    )


def trip_cause(row: BreakerRow, rule: Breaker) -> str | None:
    """Why a closed breaker with these counts opens now (None: it stays closed). Asked
    after a failure only: a success never raises the rate."""
    if rule.failures is not None and row.failures >= rule.failures:
        return f"{row.failures} consecutive failures within {rule.window:g}s"
    rate = rule.failure_rate
    calls, failures = row.window_calls, row.window_failures
    # A division, not failures >= rate * calls: 3 of 10 must meet 0.3 (0.3 * 10 > 3).
    if rate is not None and calls >= rule.min_calls and failures / calls >= rate:
        return f"{failures} of {calls} outcomes failed within {rule.window:g}s (rate {rate:g})"
    return None


@dataclass
class BreakerView:
    """The breakers as the serialised claim sees them, changed as it admits probes."""

    rules: dict[str, Breaker]
    now: int
    rows: dict[tuple[str, str], BreakerRow] = field(default_factory=dict)
    changed: set[tuple[str, str]] = field(default_factory=set)
    transitions: list[Transition] = field(default_factory=list)

    def allows(self, handler: str, key: str | None) -> bool:
        """Whether a run of ``handler``/``key`` may be claimed now (nothing changes)."""
        rule = self.rules.get(handler)
        row = self.rows.get((handler, key or ""))
        if rule is None or row is None or row.state is BreakerState.CLOSED:
            return True
        if row.state is BreakerState.OPEN:
            return self._cooled(row, rule)
        # Half-open with every probe out: a probe whose run was lost (no outcome ever
        # comes) must not hold it shut for good; after another cool-down, probe again.
        return row.probes_left > 0 or self._cooled(row, rule)

    def fails_fast(self, handler: str) -> bool:
        """Whether runs this breaker holds back end at once instead of waiting."""
        rule = self.rules.get(handler)
        return rule is not None and rule.when_open is WhenOpen.FAIL

    def why_closed(self, handler: str, key: str | None) -> str:
        """The error a run failed fast records: which breaker, and why it opened."""
        row = self.rows.get((handler, key or ""))
        where = handler if not key else f"{handler} (breaker_key {key!r})"
        cause = row.cause if row is not None and row.cause else "open"
        return f"circuit breaker of {where} is open ({cause}): failed fast, no attempt made"

    def take(self, handler: str, key: str | None) -> None:
        """Count a claimed run: as a probe if the breaker is not closed."""
        rule = self.rules.get(handler)
        ident = (handler, key or "")
        row = self.rows.get(ident)
        if rule is None or row is None or row.state is BreakerState.CLOSED:
            return
        if row.state is BreakerState.OPEN or row.probes_left == 0:
            cause = f"cool-down of {rule.cool_down:g}s passed"
            row, transition = _move(
                row, BreakerState.HALF_OPEN, self.now, cause, opened_at=self.now
            )
            row = replace(row, probes_left=rule.probes)
            if transition.from_state is not transition.to_state:
                self.transitions.append(transition)
        self.rows[ident] = replace(row, probes_left=row.probes_left - 1)
        self.changed.add(ident)

    def _cooled(self, row: BreakerRow, rule: Breaker) -> bool:
        opened = row.opened_at if row.opened_at is not None else self.now
        return self.now - opened >= int(rule.cool_down * MICROS)
