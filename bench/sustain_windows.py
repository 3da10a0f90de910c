"""(e)'s arithmetic, apart from the scenario that runs it (and so importable without
the bench's peers): the windows a sustained run is read in, and how it is judged.

A run of half an hour or more is judged by issue 24's target: its last 5 minutes within
5% of its first 5, and the queue table's size flat. A shorter one by the last minute
against the first.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.config import LONG_SUSTAIN_S
from bench.procs import ScenarioFailed
from bench.results import Results, fmt

# The queue table is flat over a long sustained run when its largest size in the last
# window is at most this many times its largest in the first (autovacuum's steady state
# sits above an empty table's size, and the first window already reaches it).
SIZE_FLAT = 1.2


@dataclass(frozen=True)
class Sample:
    elapsed: float
    done: int  # runs finished so far
    server_cpu_s: float  # PostgreSQL's CPU seconds so far
    producer_cpu_s: float  # this (parent) process's CPU seconds so far
    table_bytes: int | None = None  # the queue table with its indexes (read every 10 s)


def _nearest(samples: list[Sample], at: float) -> Sample:
    return min(samples, key=lambda s: abs(s.elapsed - at))


def window(samples: list[Sample], start: float, end: float) -> dict[str, float | None]:
    """Throughput over [start, end], CPU per finished run in it, and the queue table's
    largest size read in it."""
    first, last = _nearest(samples, start), _nearest(samples, end)
    if last.elapsed <= first.elapsed:
        raise ScenarioFailed("too few samples in a sustain window")
    done = last.done - first.done

    def per_job(seconds: float) -> float | None:
        return round(1e6 * seconds / done) if done > 0 else None

    return {
        "jobs_per_s": round(done / (last.elapsed - first.elapsed), 1),
        "server_cpu_us_per_job": per_job(last.server_cpu_s - first.server_cpu_s),
        "producer_cpu_us_per_job": per_job(last.producer_cpu_s - first.producer_cpu_s),
        "table_bytes_max": _largest_size(samples, first.elapsed, last.elapsed),
    }


def _largest_size(samples: list[Sample], start: float, end: float) -> int | None:
    """The queue table's largest size read in [start, end] (None: not read in it)."""
    return max(
        (s.table_bytes for s in samples if s.table_bytes is not None and start <= s.elapsed <= end),
        default=None,
    )


def largest_sizes(samples: list[Sample], span: float) -> list[float | None]:
    """The queue table's largest size read in each ``span`` of the run, in MiB: whether
    it grows all along or levels off after a first climb."""
    end = max((s.elapsed for s in samples), default=0.0)
    spans: list[float | None] = []
    start = 0.0
    while start < end:
        largest = _largest_size(samples, start, start + span)
        spans.append(None if largest is None else round(largest / 2**20, 1))
        start += span
    return spans


def window_rate(samples: list[Sample], start: float, end: float) -> float:
    return float(window(samples, start, end)["jobs_per_s"] or 0.0)


def sustain_targets(results: Results) -> list[tuple[str, str, bool | None]]:
    """(e)'s rows: a run of half an hour or more is judged by issue 24's target (the
    last 5 minutes within 5% of the first 5, the queue table's size flat: its largest
    in the last window at most SIZE_FLAT times its largest in the first), a shorter
    one by the older last-minute row."""
    records = [r for r in results.records if r["scenario"] == "sustain"]
    if not records:
        return [("last minute within 10% of minute 1", "—", None)]
    s = records[0]
    rates = (
        f"{fmt(s['first_window_jobs_per_s'])} → {fmt(s['last_window_jobs_per_s'])} jobs/s "
        f"(ratio {s['value']:.2f}; windows of {s['window_s']:g} s over {s['seconds']:g} s)"
    )
    if s["seconds"] < LONG_SUSTAIN_S:
        return [("last minute within 10% of minute 1", rates, s["value"] >= 0.9)]
    first = s["first_window"].get("table_bytes_max")
    last = s["last_window"].get("table_bytes_max")
    size_ratio = last / first if first and last else None
    size = (
        "—"
        if size_ratio is None
        else f"{fmt(first / 2**20)} → {fmt(last / 2**20)} MiB (ratio {size_ratio:.2f})"
    )
    return [
        ("sustained 30 min: last 5 minutes within 5% of the first 5", rates, s["value"] >= 0.95),
        (
            f"sustained 30 min: queue table size flat (largest in the last 5 minutes ≤ "
            f"{SIZE_FLAT:g}x the first 5's, with indexes)",
            size,
            None if size_ratio is None else size_ratio <= SIZE_FLAT,
        ),
    ]
