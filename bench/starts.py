"""What the start instants of a drain under a rate limit show: whether the limit held
(the most starts in any span of one period) and whether it was reached (the pace a
drain kept once the first window's burst was spent). Pure, so it is tested alone
(tests/test_bench_starts.py); the busiest window is the domain's, which the rate tests
with worker processes read too."""

from __future__ import annotations

from dataclasses import dataclass

from rota.domain.rates import busiest_window

PERIOD_MICROS = 1_000_000  # the bench's rate is per second


@dataclass(frozen=True)
class Starts:
    """What the recorded start instants of a rated drain show."""

    busiest_window: int  # the most starts in any span of one period
    steady_per_s: float | None  # starts per second after the first window (None: too short)
    steady_seconds: int  # the whole seconds that pace was measured over

    @classmethod
    def of(cls, instants: list[int]) -> Starts:
        """``instants`` sorted, in microseconds. The pace counts the starts from one
        period after the first up to the last whole second after that: the first
        window's burst and the last partial second are left out."""
        busiest = busiest_window(instants, PERIOD_MICROS)
        if not instants:
            return cls(0, None, 0)
        steady_from = instants[0] + PERIOD_MICROS
        seconds = (instants[-1] - steady_from) // 1_000_000
        if seconds < 1:
            return cls(busiest, None, 0)
        until = steady_from + seconds * 1_000_000
        counted = sum(1 for at in instants if steady_from <= at < until)
        return cls(busiest, counted / seconds, int(seconds))

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "busiest_window": self.busiest_window,
            "steady_per_s": None if self.steady_per_s is None else round(self.steady_per_s, 1),
            "steady_seconds": self.steady_seconds,
        }
