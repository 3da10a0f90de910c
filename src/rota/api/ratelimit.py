"""Per-subject token buckets and failure budgets in this server process's memory: each
caller may burst up to ``burst`` requests and then ``rate`` per second; beyond that the
API answers 429 with Retry-After.

The API's limits are counted in the database, shared by every server process
(rota.api.shared_limits, ADR 0036). These are what decides while the database cannot
answer: with N API processes a caller then gets up to N times the rate, never more.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

MAX_SUBJECTS = 10_000  # least recently seen buckets are forgotten beyond this


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, rate: float, burst: int, monotonic: Callable[[], float]) -> None:
        self.rate = rate
        self.burst = burst
        self._monotonic = monotonic
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, subject: str) -> float | None:
        """Spend one token of ``subject``'s bucket. None if allowed; otherwise the
        seconds until a token will be there."""
        now = self._monotonic()
        bucket = self._buckets.pop(subject, None) or _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        self._buckets[subject] = bucket
        if len(self._buckets) > MAX_SUBJECTS:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return (1.0 - bucket.tokens) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        """Retry-After is whole seconds: round up so a client that obeys it succeeds."""
        return str(max(1, math.ceil(wait)))


@dataclass
class _Window:
    started: float
    failures: int


class FailureBudget:
    """At most ``budget`` failures per ``window`` seconds per key; a key that spent its
    budget is *blocked* until its window ends: every request for it is refused, right
    or wrong, so guessing gains nothing by being interleaved with a correct credential.

    Fixed windows rather than a token bucket: a bucket refills one guess at a time and
    so never stops a patient guesser; a window stops it for the whole window.
    """

    def __init__(self, budget: int, window: float, monotonic: Callable[[], float]) -> None:
        self.budget = budget
        self.window = window
        self._monotonic = monotonic
        self._windows: OrderedDict[str, _Window] = OrderedDict()

    def blocked(self, key: str) -> float | None:
        """Seconds until ``key`` may try again, or None if it may now."""
        current = self._current(key, self._monotonic())
        if current is None or current.failures < self.budget:
            return None
        return current.started + self.window - self._monotonic()

    def fail(self, key: str) -> None:
        """Count one failure against ``key``."""
        now = self._monotonic()
        current = self._current(key, now) or _Window(now, 0)
        current.failures += 1
        self._windows.pop(key, None)
        self._windows[key] = current
        if len(self._windows) > MAX_SUBJECTS:
            self._windows.popitem(last=False)

    def _current(self, key: str, now: float) -> _Window | None:
        found = self._windows.get(key)
        if found is None or now - found.started >= self.window:
            return None
        return found
