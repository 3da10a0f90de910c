"""Circuit breakers, cluster-wide, per handler and optionally per ``breaker_key``.

closed --N failures in a row (within ``window`` s)--> open --``cool_down`` s--> half_open
half_open lets ``probes`` runs through: a probe's success closes it, a failure reopens.

The store keeps one row per (handler, breaker_key) and calls these pure rules in two
places only: the completion that records an attempt's outcome (:func:`on_outcome`, in
the same transaction) and the serialised limited claim (:meth:`BreakerView.allows` /
:meth:`BreakerView.take`). Every change of state is returned as a :class:`Transition`
for the store to record (ADR 0016).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from rota.domain.states import AttemptOutcome
from rota.errors import InvalidArgument

MICROS = 1_000_000


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True)
class Breaker:
    """``failures`` consecutive failures within ``window`` seconds open it; after
    ``cool_down`` seconds ``probes`` runs may try; a probe's success closes it."""

    failures: int = 5
    window: float = 60.0
    cool_down: float = 30.0
    probes: int = 1

    def __post_init__(self) -> None:
        for name in ("failures", "probes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
                raise InvalidArgument(f"breaker {name}", value, "an integer 1-10000")
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
    if not failed:
        if row.state is BreakerState.CLOSED:
            return replace(row, failures=0, streak_started_at=None), None
        cleared = {"failures": 0, "streak_started_at": None, "opened_at": None, "probes_left": 0}
        return _move(row, BreakerState.CLOSED, now, "a probe succeeded", **cleared)
    if row.state is BreakerState.HALF_OPEN:
        return _move(row, BreakerState.OPEN, now, "a probe failed", opened_at=now, probes_left=0)
    if row.state is BreakerState.OPEN:
        return row, None  # a run claimed before it opened: already open
    window = int(rule.window * MICROS)
    fresh = row.streak_started_at is None or now - row.streak_started_at > window
    started = now if fresh else row.streak_started_at
    failures = 1 if fresh else row.failures + 1
    if failures >= rule.failures:
        cause = f"{failures} consecutive failures within {rule.window:g}s"
        return _move(
            row,
            BreakerState.OPEN,
            now,
            cause,
            failures=failures,
            streak_started_at=started,
            opened_at=now,
        )
    return replace(row, failures=failures, streak_started_at=started), None


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
