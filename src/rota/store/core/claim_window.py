"""The one SQL store: what a limited claim looks for and what a candidate must pass.

A limited claim (``claim_limited.py``) reads candidates in windows; this module says
which window to ask for next (skipping every group already full), what counts as a
candidate, and the gate after the concurrency limits: a run's breaker, then its rates.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rota.domain.breakers import BreakerView
from rota.domain.limits import Active, Candidate, Limits
from rota.domain.rates import Rates, RateScope, RateUse
from rota.store.dialect import Row


@dataclass
class Gate:
    """What a candidate must also pass after the concurrency limits: its breaker, then
    its rates. A run is counted as a probe only once both let it through."""

    rates: Rates
    use: RateUse | None
    view: BreakerView | None
    tripped: frozenset[str]  # handlers whose runs the plain claim leaves to this path
    # Runs held back by a breaker whose handler fails fast: run id -> the error to record.
    doomed: dict[int, str] = field(default_factory=dict)
    # Slot runs their job's overlap policy ends Skipped (rota.domain.overlap).
    overlapped: list[int] = field(default_factory=list)

    def admit(self, c: Candidate) -> bool:
        if self.view is not None and not self.view.allows(c.handler, c.breaker_key):
            if self.view.fails_fast(c.handler):
                self.doomed[c.run_id] = self.view.why_closed(c.handler, c.breaker_key)
            return False
        if self.use is not None and not self.use.admit(c.queue, c.handler, c.rate_key):
            return False
        if self.view is not None:
            self.view.take(c.handler, c.breaker_key)
        return True

    @property
    def handlers(self) -> list[str]:
        return [*self.rates.handlers, *self.tripped]


@dataclass(frozen=True)
class Ask:
    """What a limited claim looks for."""

    queues: list[str]
    tags: list[str]
    want: int
    everything: bool  # plain runs too: the plain claim was skipped


def window_params(
    ask: Ask, limits: Limits, gate: Gate, active: Active, seen: list[int]
) -> dict[str, Any]:
    """The candidate query's parameters for the next window, skipping every group the
    runs held and chosen so far filled."""
    full_queues = set(active.full_queues(limits))
    full_handlers = active.full_handlers(limits)
    if gate.use is not None:
        full_queues.update(gate.use.full(RateScope.QUEUE))
        full_handlers += gate.use.full(RateScope.HANDLER)
    return {
        "queues": [q for q in ask.queues if q not in full_queues],
        "tags": ask.tags,
        "limited_handlers": [*limits.handlers, *gate.handlers],
        "limited_queues": [*limits.queues, *gate.rates.queues],
        "global_limit": limits.global_max is not None,
        "everything": ask.everything,
        "key_counts": not limits.any,
        "full_keys": active.full_keys(),
        "full_handlers": full_handlers,
        # Nothing passed over can fit later in this claim: every limit, rate and probe
        # budget only fills as the claim goes on.
        "chosen": seen,
    }


def candidate_of(r: Row) -> Candidate:
    return Candidate(
        r["id"],
        r["queue"],
        r["handler"],
        r["concurrency_key"],
        r["concurrency_limit"],
        r["rate_key"],
        r["breaker_key"],
    )


def count_keys(active: Active, rows: list[Row], counted: set[str]) -> None:
    """Add what runs now of each key first seen in this window (read with it): a key
    seen before already counts its held runs and the ones this claim chose."""
    for r in rows:
        key = r["concurrency_key"]
        if key is None or key in counted:
            continue
        counted.add(key)
        if r["key_running"] is not None:
            active.add_key(key, r["key_limit"], int(r["key_running"]))


def is_plain(c: Candidate, limits: Limits, gate: Gate) -> bool:
    """A run the plain claim would take: no key, limit, rate or open breaker on it."""
    return (
        c.concurrency_key is None
        and c.handler not in limits.handlers
        and c.handler not in gate.handlers
        and c.queue not in limits.queues
        and c.queue not in gate.rates.queues
    )


def starts_logged(use: RateUse | None) -> dict[str, list[Any]]:
    """The rate log's rows for this claim's starts, as claim_ids writes them: one per
    bucket (every start of a claim shares its instant), in bucket order."""
    rows: list[tuple[str, str, str, int, int]] = []
    if use is not None:
        counted = sorted(Counter(use.admitted).items(), key=lambda item: item[0][0])
        rows = [(*bucket, use.now + rate.period_micros, n) for (bucket, rate), n in counted]
    names = ("rate_scope", "rate_name", "rate_key", "rate_leaves_at", "rate_starts")
    return {name: [row[i] for row in rows] for i, name in enumerate(names)}
