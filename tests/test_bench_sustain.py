"""How bench (e) judges a sustained run: a run of half an hour by issue 24's target
(its last 5 minutes against its first 5, the queue table's size flat), a shorter one by
the last minute against the first; and the windows it reads from its samples."""

from __future__ import annotations

from typing import Any

import pytest
from bench.results import Results
from bench.sustain_windows import Sample, largest_sizes, sustain_targets, window

MIB = 2**20


def _run(seconds: float, first: float, last: float, sizes: tuple[Any, Any]) -> Results:
    results = Results()
    results.add(
        "sustain",
        "rota",
        f"2 processes, {seconds / 60:g} min",
        last / first,
        first_window_jobs_per_s=first,
        last_window_jobs_per_s=last,
        first_window={"table_bytes_max": sizes[0]},
        last_window={"table_bytes_max": sizes[1]},
        window_s=300.0 if seconds >= 1800 else 60.0,
        seconds=seconds,
    )
    return results


def test_half_an_hour_is_judged_by_its_first_and_last_five_minutes() -> None:
    [rate, size] = sustain_targets(_run(1800, 20_000, 19_200, (150 * MIB, 170 * MIB)))
    assert rate[0].startswith("sustained 30 min: last 5 minutes within 5%")
    assert rate[2] is True  # 0.96
    assert "150 → 170 MiB (ratio 1.13)" in size[1]
    assert size[2] is True


@pytest.mark.parametrize(
    ("last_rate", "last_size", "reached"),
    [(18_900, 150 * MIB, (False, True)), (20_000, 190 * MIB, (True, False))],
)
def test_a_slower_end_or_a_growing_table_misses_its_target(
    last_rate: float, last_size: int, reached: tuple[bool, bool]
) -> None:
    rows = sustain_targets(_run(1800, 20_000, last_rate, (150 * MIB, last_size)))
    assert tuple(row[2] for row in rows) == reached


def test_an_unread_table_size_is_not_judged() -> None:
    [_, size] = sustain_targets(_run(1800, 20_000, 20_000, (None, 150 * MIB)))
    assert size[1:] == ("—", None)


def test_a_five_minute_run_keeps_the_last_minute_row() -> None:
    [row] = sustain_targets(_run(300, 20_000, 18_100, (None, None)))
    assert row[0] == "last minute within 10% of minute 1"
    assert row[2] is True  # 0.905


def test_a_window_reads_its_pace_and_the_largest_table_size_in_it() -> None:
    samples = [
        Sample(0.0, 0, 0.0, 0.0, 100 * MIB),
        Sample(5.0, 50_000, 1.0, 0.1),
        Sample(10.0, 100_000, 2.0, 0.2, 120 * MIB),
        Sample(15.0, 150_000, 3.0, 0.3, 400 * MIB),
    ]
    read = window(samples, 0.0, 10.0)
    assert read["jobs_per_s"] == 10_000
    assert read["server_cpu_us_per_job"] == 20
    assert read["table_bytes_max"] == 120 * MIB  # the read at 15 s is outside it


def test_largest_sizes_are_read_per_span_in_mib() -> None:
    samples = [
        Sample(0.0, 0, 0.0, 0.0, 100 * MIB),
        Sample(5.0, 0, 0.0, 0.0, None),
        Sample(9.0, 0, 0.0, 0.0, 120 * MIB),
        Sample(10.0, 0, 0.0, 0.0, 110 * MIB),
        Sample(25.0, 0, 0.0, 0.0, None),
    ]
    assert largest_sizes(samples, 10.0) == [120.0, 110.0, None]
