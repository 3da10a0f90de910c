"""Cluster-wide rate limits on run starts, decided at claim time.

A rate ``N/period`` holds over every sliding window: no span of ``period`` ever sees
more than N starts of a bucket. A bucket is (scope, name, rate_key): a handler's or a
queue's rate applies to each ``rate_key`` its runs carry separately (runs without one
share the key ``""``).

The store keeps a log of recent starts (one row per start, with the instant it leaves
the window) and, while the claim is serialised (ADR 0008), hands what is live to
:class:`RateUse`, which admits candidates and says when the next slot frees. Instants
are whole microseconds (:func:`micros`), so the store's check and a reader of the
recorded start times agree exactly on which window a start fell in (ADR 0016).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from rota.domain.runs import check_name
from rota.domain.values import MAX_INT32, one_of
from rota.errors import InvalidArgument

PERIODS = {"second": 1, "minute": 60, "hour": 3600}
RATE_PATTERN = re.compile(r"\s*(\d+)\s*/\s*([a-z]+)\s*")
RATE_RULE = "'<count>/<period>' with count >= 1 and period one of second, minute, hour"


class RateScope(StrEnum):
    QUEUE = "queue"
    HANDLER = "handler"


@dataclass(frozen=True)
class Rate:
    count: int
    period_seconds: int

    @classmethod
    def parse(cls, text: object, field_name: str = "rate_limit") -> Rate:
        """``"100/minute"`` (also ``/second``, ``/hour``); anything else names the value."""
        match = RATE_PATTERN.fullmatch(text) if isinstance(text, str) else None
        if match is None or match.group(2) not in PERIODS:
            raise InvalidArgument(field_name, text, RATE_RULE)
        count = int(match.group(1))
        if not 1 <= count <= MAX_INT32:
            raise InvalidArgument(field_name, text, RATE_RULE)
        return cls(count, PERIODS[match.group(2)])

    def __str__(self) -> str:
        unit = next(u for u, s in PERIODS.items() if s == self.period_seconds)
        return f"{self.count}/{unit}"

    @property
    def period_micros(self) -> int:
        return self.period_seconds * 1_000_000


@dataclass(frozen=True)
class RateLimit:
    scope: RateScope
    name: str
    rate: Rate

    @classmethod
    def parse(cls, scope: str, name: str, rate: str) -> RateLimit:
        kind = one_of("rate scope", RateScope, scope)
        check_name(f"{kind.value} name", name)
        return cls(kind, name, Rate.parse(rate, "rate"))


@dataclass(frozen=True)
class Rates:
    queues: dict[str, Rate] = field(default_factory=dict)
    handlers: dict[str, Rate] = field(default_factory=dict)

    @classmethod
    def of(cls, limits: list[RateLimit]) -> Rates:
        queues = {r.name: r.rate for r in limits if r.scope is RateScope.QUEUE}
        handlers = {r.name: r.rate for r in limits if r.scope is RateScope.HANDLER}
        return cls(queues, handlers)

    @property
    def any(self) -> bool:
        return bool(self.queues) or bool(self.handlers)


Bucket = tuple[str, str, str]  # (scope, name, rate_key)


def micros(instant: datetime | float) -> int:
    """An instant as whole microseconds since the epoch (floored: SQLite stores floats)."""
    if isinstance(instant, datetime):
        delta = instant - datetime(1970, 1, 1, tzinfo=instant.tzinfo)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return math.floor(instant * 1_000_000)


def busiest_window(starts: Sequence[int], period_micros: int) -> int:
    """The most of ``starts`` (sorted instants, microseconds) that any span of one
    period holds: what a rate of N per that period promises never exceeds N. A start
    leaves its window one period after it, so two starts a whole period apart share
    none (the spans are half-open, as the rate log's are)."""
    most, first = 0, 0
    for last, at in enumerate(starts):
        while starts[first] <= at - period_micros:
            first += 1
        most = max(most, last - first + 1)
    return most


@dataclass
class RateUse:
    """Starts still inside their window, per bucket, at ``now`` (microseconds)."""

    rates: Rates
    now: int
    used: Counter[Bucket] = field(default_factory=Counter)
    # When the oldest live start of each bucket leaves its window.
    first_leaving: dict[Bucket, int] = field(default_factory=dict)
    admitted: list[tuple[Bucket, Rate]] = field(default_factory=list)

    def add_live(self, bucket: Bucket, count: int, first_leaves_at: int) -> None:
        self.used[bucket] += count
        self.first_leaving[bucket] = first_leaves_at

    def buckets(self, queue: str, handler: str, rate_key: str | None) -> list[tuple[Bucket, Rate]]:
        key = rate_key or ""
        found = []
        if (rate := self.rates.handlers.get(handler)) is not None:
            found.append(((RateScope.HANDLER.value, handler, key), rate))
        if (rate := self.rates.queues.get(queue)) is not None:
            found.append(((RateScope.QUEUE.value, queue, key), rate))
        return found

    def admit(self, queue: str, handler: str, rate_key: str | None) -> bool:
        """Whether one more start now keeps every rate; if so, it is counted."""
        buckets = self.buckets(queue, handler, rate_key)
        if any(self.used[b] >= rate.count for b, rate in buckets):
            return False
        for bucket, rate in buckets:
            self.used[bucket] += 1
            self.admitted.append((bucket, rate))
        return True

    def full(self, scope: RateScope) -> list[str]:
        """Names whose unkeyed bucket is full: the candidate query can skip their runs."""
        rates = self.rates.handlers if scope is RateScope.HANDLER else self.rates.queues
        return [n for n, r in rates.items() if self.used[(scope.value, n, "")] >= r.count]

    def next_free_in(self) -> float | None:
        """Seconds until the soonest full bucket may get a slot back (None: none is
        full). A wake-up hint: when a lowered rate left a bucket over its count, its
        first start leaving frees nothing yet, and the woken worker waits again."""
        soonest: int | None = None
        for bucket, at in self.first_leaving.items():
            rate = self.rate_of(bucket)
            if rate is None or self.used[bucket] < rate.count:
                continue
            soonest = at if soonest is None else min(soonest, at)
        return None if soonest is None else max(soonest - self.now, 0) / 1_000_000

    def rate_of(self, bucket: Bucket) -> Rate | None:
        scope, name, _ = bucket
        table = self.rates.handlers if scope == RateScope.HANDLER.value else self.rates.queues
        return table.get(name)
