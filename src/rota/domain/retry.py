"""Retry policies. A policy maps an attempt number to a delay; ``decide`` turns that into
a value the worker writes: retry at an instant, or give up."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Protocol

from rota.errors import InvalidArgument


class RetryPolicy(Protocol):
    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""


def _non_negative(name: str, value: float) -> float:
    if not isinstance(value, int | float) or value < 0:
        raise InvalidArgument(name, value, "a number of seconds >= 0")
    return float(value)


@dataclass(frozen=True)
class Fixed:
    """The same delay after every failed attempt."""

    seconds: float = 10.0

    def __post_init__(self) -> None:
        _non_negative("retry seconds", self.seconds)

    def delay(self, attempt: int) -> float:
        return self.seconds


@dataclass(frozen=True)
class Exponential:
    """``base * factor**(attempt-1)``, capped at ``cap`` seconds."""

    base: float = 1.0
    factor: float = 2.0
    cap: float = 300.0

    def __post_init__(self) -> None:
        _non_negative("retry base", self.base)
        _non_negative("retry cap", self.cap)
        if self.factor < 1:
            raise InvalidArgument("retry factor", self.factor, "a number >= 1")

    def delay(self, attempt: int) -> float:
        exponent = max(attempt - 1, 0)
        if self.base == 0 or self.cap == 0:
            return 0.0
        # Compare in log space: base * factor**exponent overflows a float long before
        # attempt numbers stop being plausible.
        if math.log(self.base) + exponent * math.log(self.factor) >= math.log(self.cap):
            return self.cap
        return float(self.base * self.factor**exponent)


@dataclass(frozen=True)
class ExponentialJitter:
    """Exponential backoff with "full jitter": a uniform draw in [0, exponential delay].

    Full jitter spreads a burst of failures (a dependency that went down for everyone)
    evenly instead of having them all retry at the same instant.
    """

    base: float = 1.0
    cap: float = 300.0
    factor: float = 2.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        Exponential(self.base, self.factor, self.cap)  # validates

    def delay(self, attempt: int) -> float:
        ceiling = Exponential(self.base, self.factor, self.cap).delay(attempt)
        return self.rng.uniform(0.0, ceiling)


@dataclass(frozen=True)
class RetryIn:
    """Retry after ``delay`` seconds, counted from the database's clock when written."""

    delay: float


@dataclass(frozen=True)
class GiveUp:
    reason: str


RetryDecision = RetryIn | GiveUp


def decide(policy: RetryPolicy, attempt: int, max_attempts: int) -> RetryDecision:
    """What to do after attempt number ``attempt`` (1-based) failed."""
    if attempt >= max_attempts:
        return GiveUp(f"attempt {attempt} of {max_attempts} failed; no attempts left")
    return RetryIn(policy.delay(attempt))


DEFAULT_POLICY: RetryPolicy = ExponentialJitter(base=1.0, cap=300.0)
