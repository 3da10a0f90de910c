"""The HTTP API's limits held in the database (ADR 0036): what one hit on a key's fixed
window tells its caller, and the rule that turns it into an answer. Pure: no I/O, no
clock (the store counts, with the database clock)."""

from __future__ import annotations

from dataclasses import dataclass

from rota.errors import InvalidArgument


@dataclass(frozen=True)
class WindowCount:
    """A key's window after one hit: the hits counted in it, this one included, and the
    seconds until it ends (and a refused caller may try again)."""

    count: int
    seconds_left: float

    def wait(self, limit: int) -> float | None:
        """None if this hit is within ``limit``; else the seconds until the window ends."""
        if limit < 1:
            raise InvalidArgument("limit", limit, "an integer >= 1")
        return None if self.count <= limit else max(self.seconds_left, 0.0)


def rate_window_seconds(rate_per_second: float, burst: int) -> float:
    """The window that lets ``burst`` requests through at once and ``rate_per_second`` on
    average: ``burst`` hits per ``burst / rate_per_second`` seconds."""
    if rate_per_second <= 0 or burst < 1:
        raise InvalidArgument("rate", (rate_per_second, burst), "a rate > 0 and a burst >= 1")
    return burst / rate_per_second
