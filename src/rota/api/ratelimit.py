"""Per-subject token buckets: each caller may burst up to ``burst`` requests and then
``rate`` per second; beyond that the API answers 429 with Retry-After.

The buckets live in this server process's memory: with N API processes behind a load
balancer a caller gets up to N times the rate. That is deliberate (no shared state on the
hot path); a limit that must hold cluster-wide belongs in a gateway in front of rota.
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
