"""The only module that reads the wall clock.

Everything else takes ``now`` as an argument or a :class:`Clock`. Lease expiry is never
judged here: the store compares leases with the *database* clock, so machines whose
clocks disagree still agree on who holds a run. ``Clock.db_now()`` is how a test
overrides the database clock too: a real clock answers ``None`` ("let the database
decide"), a :class:`FakeClock` answers its own time.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

from rota.domain.values import require_aware

TICK_PHASE_SECONDS = 0.5  # ticks fall between whole seconds, where cron slots are


def next_tick(now: float, period: float, phase: float = TICK_PHASE_SECONDS) -> float:
    """The next instant after ``now`` (seconds since the epoch) on the grid
    ``phase + k * period``. A loop that sleeps to it keeps its instants whatever its
    turns take, where "sleep ``period`` after the work" drifts by the work every turn."""
    if period <= 0:
        raise ValueError("period must be > 0")
    return phase + (math.floor((now - phase) / period) + 1) * period


class Clock(Protocol):
    def now(self) -> datetime:
        """An aware UTC datetime."""

    def db_now(self) -> datetime | None:
        """The instant the store should treat as 'now', or None for the database's clock."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for measuring intervals."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def db_now(self) -> datetime | None:
        return None

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to. Thread-safe: workers read it from threads."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        require_aware(start, "start")
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def db_now(self) -> datetime | None:
        return self.now()

    def monotonic(self) -> float:
        return self.now().timestamp()

    def advance(self, seconds: float = 0.0, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds, **delta)
            return self._now

    def set(self, when: datetime) -> None:
        require_aware(when, "when")
        with self._lock:
            self._now = when
