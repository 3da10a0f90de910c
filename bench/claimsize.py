"""(q) Issue 24: a claim's server cost grows with the runs it returns, not a fixed cost.

If every claim cost the server the same whatever it returned, a worker that may hold
only a few runs (small concurrency, so small claims) would pay that cost many more times
per run, and drain much slower. The same ``cfg.jobs`` no-op runs are drained by the 2
worker processes of (b), asyncio loop, at each of ``cfg.claim_concurrencies`` (8 and
rota's default 100), both in every repeat (which goes first alternates), a fresh
database each. Target: concurrency 8 drains at >= 0.7 of concurrency 100.

Claims are counted by the workers themselves: rota's histogram of runs per claim
(``rota_claim_batch_runs``, kept while metrics are on, as in (b)) counts every claim
that returned runs; the few empty ones at the end of a drain are not in it.
"""

from __future__ import annotations

import statistics
from functools import partial
from typing import Any

from bench import scenarios
from bench.config import BenchConfig
from bench.results import Results, Summary
from bench.systems import RotaWorkerSettings, rota_system

SCENARIO = "claimsize"
PROCESSES = 2
TARGET = 0.7  # the small concurrency's drain rate over the default one's


def variant(concurrency: int) -> str:
    return f"{PROCESSES} processes, concurrency {concurrency}"


def claim_size(cfg: BenchConfig, results: Results, repeat: int) -> None:
    """One repeat: the drain at each concurrency, the first one alternating."""
    concurrencies = cfg.claim_concurrencies
    for concurrency in concurrencies if repeat % 2 == 0 else concurrencies[::-1]:
        system = rota_system(RotaWorkerSettings(concurrency=concurrency, loop="asyncio"))
        result = results.attempt(
            SCENARIO,
            "rota",
            variant(concurrency),
            partial(scenarios.pg_drain_once, cfg, system, PROCESSES),
        )
        if result is not None:
            results.add(
                SCENARIO,
                "rota",
                variant(concurrency),
                result.jobs_per_s,
                **result.as_dict(),
                concurrency=concurrency,
            )


def _records(results: Results, concurrency: int) -> list[dict[str, Any]]:
    return [
        r
        for r in results.records
        if r["scenario"] == SCENARIO and r.get("concurrency") == concurrency
    ]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _per_run_us(records: list[dict[str, Any]], key: str) -> float | None:
    return _median([1e6 * r[key] / r["jobs"] for r in records if r.get(key) is not None])


def _per_claim(records: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """Median runs per claim, and median server CPU µs per claim."""
    counted = [r for r in records if r.get("claims")]
    runs = _median([r["jobs"] / r["claims"] for r in counted])
    server = _median(
        [1e6 * r["server_cpu_s"] / r["claims"] for r in counted if r["server_cpu_s"] is not None]
    )
    return runs, server


def _rate(results: Results, concurrency: int) -> Summary | None:
    return Summary.of(results.values(SCENARIO, "rota", variant(concurrency)))


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _middle(summary: Summary | None) -> float | None:
    return None if summary is None else summary.median


def ratio(results: Results, concurrencies: tuple[int, int]) -> float | None:
    """The small concurrency's median drain rate over the large one's."""
    small, large = (_rate(results, c) for c in concurrencies)
    return small.median / large.median if small and large and large.median else None


def _concurrencies(results: Results) -> tuple[int, int]:
    small, large = results.meta.get("config", {}).get("claim_concurrencies", (8, 100))
    return int(small), int(large)


def claimsize_target(results: Results) -> tuple[str, str, bool | None]:
    small, large = _concurrencies(results)
    measured = ratio(results, (small, large))
    rates = {c: _rate(results, c) for c in (small, large)}
    return (
        f"a claim's cost grows with its runs: concurrency {small} drains at ≥ {TARGET:g} of "
        f"concurrency {large}",
        f"{_num(_middle(rates[small]))} vs {_num(_middle(rates[large]))} jobs/s "
        f"(ratio {_num(measured, 2)})",
        None if measured is None else measured >= TARGET,
    )


def claimsize_lines(results: Results) -> list[str]:
    small, large = _concurrencies(results)
    if not _records(results, small) and not _records(results, large):
        return ["(not measured in this run)"]
    lines = [
        "| variant | jobs/s (median, min..max) | worker CPU µs/run | server CPU µs/run | "
        "runs per claim | server CPU µs per claim |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for concurrency in (small, large):
        records = _records(results, concurrency)
        rate = _rate(results, concurrency)
        runs_per_claim, server_per_claim = _per_claim(records)
        cell = (
            f"**{_num(rate.median)}** ({_num(rate.low)}..{_num(rate.high)})" if rate else "failed"
        )
        lines.append(
            f"| {variant(concurrency)} | {cell} | {_num(_per_run_us(records, 'workers_cpu_s'))} "
            f"| {_num(_per_run_us(records, 'server_cpu_s'))} | {_num(runs_per_claim, 1)} | "
            f"{_num(server_per_claim)} |"
        )
    lines += [
        "",
        f"Ratio concurrency {small} / concurrency {large} of the medians: "
        f"**{_num(ratio(results, (small, large)), 2)}** (target ≥ {TARGET:g}).",
        "",
        f"The {PROCESSES} worker processes of (b) (asyncio loop, pool_size 4, metrics on) "
        "drain the same pre-enqueued no-op runs at each concurrency, both in every repeat "
        "(the first alternating), each in a fresh database. A worker claims as many runs as "
        "it has free slots (at most 100), so the concurrency sets the claim's size. Claims "
        "are those that returned runs, counted by each worker's own histogram of runs per "
        "claim (`rota_claim_batch_runs`); the empty claims at the end of a drain are not "
        "counted. Server CPU is all of the drain's backends' CPU (claims, completions, "
        "lease renewals, the leader's duties) read from /proc, so per claim it is an upper "
        "bound of the claim's own cost; medians over the repeats of each ratio.",
    ]
    return lines
