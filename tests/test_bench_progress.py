"""How bench (r) reads a drain's pace from its sampled progress (bench.progress), and the
windows it compares around a drop (drop_windows)."""

from __future__ import annotations

import pytest
from bench.progress import Progress, drop_windows


def test_a_steady_drain_reads_its_pace_in_any_window() -> None:
    # 1,000 runs a second for 4 s, sampled every 0.5 s.
    samples = [(t / 2, 500 * t) for t in range(1, 8)]
    progress = Progress.of(samples, jobs=4_000, end_s=4.0)
    assert progress.rate(0.0, 4.0) == pytest.approx(1_000)
    assert progress.rate(1.25, 2.75) == pytest.approx(1_000)  # between samples


def test_a_stall_shows_in_its_window_only() -> None:
    # 1,000/s for 1 s, nothing for 1 s (a lock), then 2,000/s for 1 s to catch up.
    samples = [(0.5, 500), (1.0, 1_000), (1.5, 1_000), (2.0, 1_000), (2.5, 2_000)]
    progress = Progress.of(samples, jobs=3_000, end_s=3.0)
    assert progress.rate(1.0, 2.0) == 0
    assert progress.rate(2.0, 3.0) == pytest.approx(2_000)
    assert progress.rate(0.0, 3.0) == pytest.approx(1_000)


def test_a_window_past_the_drains_end_has_no_pace() -> None:
    progress = Progress.of([(0.5, 400)], jobs=1_000, end_s=1.0)
    assert progress.rate(1.0, 2.0) is None
    assert progress.rate(0.5, 2.0) == pytest.approx(1_200)  # cut to the drain's end


def test_samples_outside_the_drain_are_left_out() -> None:
    progress = Progress.of([(-0.1, 0), (0.5, 500), (1.2, 1_000)], jobs=1_000, end_s=1.0)
    assert progress.samples == ((0.0, 0), (0.5, 500), (1.0, 1_000))


def test_the_window_around_a_drop_lasts_as_long_as_the_drop() -> None:
    short = drop_windows(after_s=1.0, drop_start_s=1.0, drop_s=0.2, end_s=6.0)
    assert short == {"before": (0.0, 1.0), "during": (1.0, 2.0), "after": (2.0, 6.0)}
    long = drop_windows(after_s=1.0, drop_start_s=1.0, drop_s=3.5, end_s=6.0)
    assert long["during"] == (1.0, 4.5)
    assert long["after"] == (4.5, 6.0)
