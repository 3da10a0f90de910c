"""The rated drain's reading of its start instants (bench.starts): the busiest window
and the pace after the first one are what issue 14's rate target is judged on."""

from __future__ import annotations

from bench.starts import Starts

SECOND = 1_000_000


def test_a_drain_at_the_limit_reads_as_the_limit() -> None:
    # 5 starts at once, then 5 more at each whole second: a sliding window of 5/s allows
    # exactly this (a start leaves its window one period after it).
    instants = [t * SECOND for t in range(5) for _ in range(5)]
    starts = Starts.of(instants)
    assert starts.busiest_window == 5
    assert starts.steady_per_s == 5.0
    assert starts.steady_seconds == 3  # seconds 1, 2 and 3; the start at 4 s ends it


def test_the_first_windows_burst_is_left_out_of_the_pace() -> None:
    burst = [0] * 100
    after = [SECOND + i * SECOND // 10 for i in range(30)]  # 10 per second for 3 s
    starts = Starts.of(burst + after)
    assert starts.busiest_window == 100
    assert starts.steady_per_s == 10.0


def test_too_short_a_drain_has_no_pace() -> None:
    assert Starts.of([0, SECOND // 2, SECOND + SECOND // 2]).steady_per_s is None
    assert Starts.of([]) == Starts(0, None, 0)
