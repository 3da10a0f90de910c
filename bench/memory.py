"""(n) Issue 15: a rota worker's memory, idle and after draining many runs.

One worker process (the drain worker, the swept setting) on PostgreSQL. Its resident
set (VmRSS from /proc, read by the parent) is sampled: once connected and idle, again
after a few seconds of idling, then after every batch of runs it drains. The parent
feeds it one COPY of BATCH runs at a time and waits until none is unfinished, so the
worker holds at most one batch. "Growth" compares the last quarter of the samples with
the first quarter after warm-up: a leak grows with the runs drained, a cache levels off.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench import pg, rota_runner
from bench.config import BenchConfig
from bench.procs import ScenarioFailed, WorkerGroup
from bench.results import Results, run_async, say
from bench.systems import RotaWorkerSettings, rota_system

BATCH = 20_000
IDLE_S = 5.0  # how long the idle worker is left alone before its second reading
POLL_S = 0.05
GOAL_MB = 80.0


def rss_mb(pid: int) -> float:
    """The resident set of ``pid`` in MiB (Linux); ScenarioFailed if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError as exc:
        raise ScenarioFailed(f"worker {pid} is gone: {exc}") from None
    raise ScenarioFailed(f"no VmRSS for {pid}")


def _wait_drained(probe: pg.Probe, group: WorkerGroup, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while probe.scalar(rota_runner.UNFINISHED_SQL) > 0:
        group.check_errors()
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"a batch of {BATCH:,} not drained in {timeout_s:.0f} s")
        time.sleep(POLL_S)


def worker_memory_once(cfg: BenchConfig, worker: RotaWorkerSettings, runs: int) -> dict[str, Any]:
    system = rota_system(worker)
    with pg.fresh_database(cfg.admin_url, "memory") as url:
        run_async(system.module.install(url), 120)
        with (
            WorkerGroup(
                system.module.drain_worker, [system.worker_kwargs(url, 0)], system.loop
            ) as group,
            pg.Probe(url) as probe,
        ):
            group.start()
            [pid] = group.pids
            group.go()
            idle_start = rss_mb(pid)
            time.sleep(IDLE_S)  # nothing to wait for: idling is what is measured
            idle = rss_mb(pid)
            samples: list[tuple[int, float]] = []
            for drained in range(BATCH, runs + BATCH, BATCH):
                run_async(rota_runner.enqueue_batches(url, BATCH, BATCH), 120)
                _wait_drained(probe, group, cfg.scenario_timeout_s)
                samples.append((drained, rss_mb(pid)))
            group.stop()
            group.collect(timeout=60)
    quarter = max(1, len(samples) // 4)
    early = sorted(mb for _, mb in samples[:quarter])[quarter // 2]
    late = sorted(mb for _, mb in samples[-quarter:])[quarter // 2]
    return {
        "idle_start_mb": round(idle_start, 1),
        "idle_mb": round(idle, 1),
        "after_mb": round(samples[-1][1], 1),
        "peak_mb": round(max(mb for _, mb in samples), 1),
        "early_mb": round(early, 1),
        "late_mb": round(late, 1),
        "runs": samples[-1][0],
        "samples": [[n, round(mb, 1)] for n, mb in samples],
    }


def worker_memory(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    runs = cfg.memory_runs
    variant = f"1 process, {worker.describe()}, {runs:,} runs in batches of {BATCH:,}"
    say(f"worker memory: {variant}")
    stats = results.attempt(
        "memory", "rota", variant, lambda: worker_memory_once(cfg, worker, runs)
    )
    if stats is not None:
        results.add("memory", "rota", variant, stats["after_mb"], unit="MiB", **stats)


def memory_lines(results: Results) -> list[str]:
    records = [r for r in results.records if r["scenario"] == "memory"]
    if not records:
        return ["(not measured in this run)"]
    lines = [
        "| variant | idle at start MiB | idle after "
        f"{IDLE_S:g} s MiB | first quarter of readings (median) MiB | last quarter "
        "(median) MiB | at the end MiB | peak MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| {r['variant']} | {r['idle_start_mb']} | {r['idle_mb']} | {r['early_mb']} | "
            f"{r['late_mb']} | {r['after_mb']} | {r['peak_mb']} |"
        )
    lines += [
        "",
        "Resident set (VmRSS) of one rota worker process, read from /proc by the bench. "
        f"The parent enqueues {BATCH:,} runs (one COPY) and waits until the worker has "
        "drained them, then reads the worker's RSS, until the total is reached. Goal "
        f"(issue 15): under {GOAL_MB:g} MiB, no growth.",
    ]
    return lines


def memory_target(results: Results) -> tuple[str, bool | None]:
    """The Targets row's text and verdict: under GOAL_MB idle and at the end, and the
    last quarter within 5% (or 2 MiB) of the first quarter."""
    records = [r for r in results.records if r["scenario"] == "memory"]
    if not records:
        return "—", None
    r = records[0]
    growth = r["late_mb"] - r["early_mb"]
    flat = growth <= max(2.0, 0.05 * r["early_mb"])
    ok = r["idle_mb"] < GOAL_MB and r["peak_mb"] < GOAL_MB and flat
    return (
        f"idle {r['idle_mb']} MiB; after {r['runs']:,} runs {r['after_mb']} MiB "
        f"(peak {r['peak_mb']}; last quarter - first quarter = {growth:+.1f} MiB)",
        ok,
    )
