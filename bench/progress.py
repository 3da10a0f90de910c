"""A drain's progress as sampled from outside (runs done by each instant), and its pace
over any window: what bench.retire compares before, during and after a drop."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """(seconds since the start line, runs done) samples, in time order; the drain
    started at (0, 0) and is over at ``end_s``, when all ``jobs`` were done."""

    samples: tuple[tuple[float, int], ...]
    jobs: int
    end_s: float

    @classmethod
    def of(cls, samples: list[tuple[float, int]], jobs: int, end_s: float) -> Progress:
        inside = sorted((t, done) for t, done in samples if 0 < t < end_s)
        return cls(((0.0, 0), *inside, (end_s, jobs)), jobs, end_s)

    def done_at(self, at: float) -> float:
        """Runs done by ``at``, read linearly between the samples around it."""
        if at >= self.end_s:
            return float(self.jobs)
        if at <= 0:
            return 0.0
        times = [t for t, _ in self.samples]
        after = bisect_left(times, at)
        (t0, d0), (t1, d1) = self.samples[after - 1], self.samples[after]
        return d0 + (d1 - d0) * (at - t0) / (t1 - t0) if t1 > t0 else float(d1)

    def rate(self, start: float, end: float) -> float | None:
        """Runs per second over [start, end], cut to the drain; None if nothing is left
        of the window (it began after the drain was over)."""
        end = min(end, self.end_s)
        if end <= start:
            return None
        return (self.done_at(end) - self.done_at(start)) / (end - start)


def drop_windows(
    after_s: float, drop_start_s: float, drop_s: float, end_s: float
) -> dict[str, tuple[float, float]]:
    """Before the drop; during it (at least ``after_s`` long, so a short drop's after-
    effects count too); and from then to the drain's end."""
    during_end = drop_start_s + max(after_s, drop_s)
    return {
        "before": (0.0, drop_start_s),
        "during": (drop_start_s, during_end),
        "after": (during_end, end_s),
    }
