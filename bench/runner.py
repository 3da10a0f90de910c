"""One bench run: the scenarios in order, then the report."""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

from bench import (
    api,
    claimsize,
    cron,
    latency,
    limited,
    machine,
    memory,
    observability,
    pg,
    profiling,
    rates,
    retire,
    scenarios,
    sustain,
)
from bench import dashboard as dashboard_pages
from bench import webhooks as webhook_delivery
from bench.config import BenchConfig
from bench.report import write_report
from bench.results import Results, say
from bench.systems import DEFAULTS, PEERS, RotaWorkerSettings, System, rota_system

DOCS = Path(__file__).resolve().parent.parent / "docs"


def build_config(args: argparse.Namespace) -> BenchConfig:
    cfg = BenchConfig(admin_url=args.admin_url)
    if args.quick:
        cfg = cfg.smoke()
    overrides = {
        "sustain_minutes": args.sustain_minutes,
        "repeats": args.repeats,
        "jobs": args.jobs,
        "memory_runs": args.memory_runs,
        "retire_runs": args.retire_runs,
    }
    return replace(cfg, **{k: v for k, v in overrides.items() if v is not None})


def rotated(systems: tuple[System, ...], repeat: int) -> tuple[System, ...]:
    """``systems`` starting with the one at ``repeat`` (mod their number)."""
    start = repeat % len(systems)
    return systems[start:] + systems[:start]


def run_all(cfg: BenchConfig, only: set[str], results: Results) -> None:
    """The scenarios in an order that interleaves systems within each repeat, so slow
    drift on the machine (other load, a checkpoint) hits every system alike."""
    worker = RotaWorkerSettings()
    if only & {"drain", "sqlite", "sustain"}:
        worker = scenarios.sweep_rota_workers(cfg, results)
    rota = rota_system(worker)
    results.meta.update(machine.describe(cfg.admin_url, rota))
    results.meta["rota_worker"] = worker.describe()
    results.meta["settings"] = {s.name: s.settings for s in (rota, *PEERS)}
    results.meta["default_settings"] = {s.name: s.settings for s in DEFAULTS}
    for repeat in range(cfg.repeats):
        say(f"repeat {repeat + 1} of {cfg.repeats}")
        # Each repeat starts with the next system: none always goes first (cold caches,
        # a fresh server) or last (after the others' dead tuples and checkpoints).
        systems = rotated((rota, *PEERS), repeat)
        results.meta.setdefault("orders", []).append([s.name for s in systems])
        if "enqueue" in only:
            for system in systems:
                scenarios.bulk_enqueue(cfg, results, system, cfg.enqueue_batch)
            scenarios.bulk_enqueue(cfg, results, rota, cfg.jobs)  # one call with every run
        if "drain" in only:
            for processes in cfg.worker_counts:
                for system in systems:
                    scenarios.pg_drain(cfg, results, system, processes)
                # The same drain as each system ships (no tuning), labelled ", defaults".
                for system in rotated(DEFAULTS, repeat):
                    scenarios.pg_drain(cfg, results, system, processes)
        if "sqlite" in only:
            for processes in cfg.worker_counts:
                scenarios.sqlite_drain(cfg, results, worker, processes)
        if "latency" in only:
            # Repeated too: a p99 of 500 samples is decided by its 5 worst, and one
            # noisy neighbour on a 2-core box moves it by several milliseconds.
            for system in systems:
                latency.latency(cfg, results, system)
        if "limited" in only:
            limited.limited_drain(cfg, results, worker)
        if "rates" in only:
            rates.rates_and_breakers(cfg, results, worker)
        if "claimsize" in only:
            claimsize.claim_size(cfg, results, repeat)
        if "retire" in only:
            retire.retire_day(cfg, results, worker, repeat)
    if "drain" in only:
        for system in (rota, *PEERS):
            scenarios.pg_drain_analyzed(cfg, results, system)
    if "profile" in only:
        profiling.profile_rota(cfg, results, worker)
    if "sustain" in only:
        sustain.sustain(cfg, results, worker)
    if "cron" in only:
        cron.cron_schedules(cfg, results, worker)
    if "api" in only:
        api.api(cfg, results)
    if "metrics" in only:
        observability.metrics_overhead(cfg, results, worker)
        observability.scrape_time(cfg, results)
    if "dashboard" in only:
        dashboard_pages.dashboard(cfg, results)
    if "webhooks" in only:
        webhook_delivery.webhooks(cfg, results)
    if "memory" in only:
        memory.worker_memory(cfg, results, worker)


def run(args: argparse.Namespace, command: str, source: str, all_scenarios: tuple[str, ...]) -> int:
    if args.report_only:
        results = Results.load(args.report_only)
        out = args.out or DOCS / "benchmarks.md"
        write_report(results, out, out.with_suffix(".png"))
        say(f"wrote {out}")
        return 0
    cfg = build_config(args)
    out = args.out or (
        Path(tempfile.gettempdir()) / "rota-bench-quick" / "benchmarks.md"
        if cfg.quick
        else DOCS / "benchmarks.md"
    )
    stale = pg.drop_stale_databases(cfg.admin_url)
    if stale:
        say(f"dropped {len(stale)} databases left by an earlier run")
    results = Results(meta={"config": asdict(cfg), "command": command, "rota_source": source})
    started = time.monotonic()
    try:
        run_all(cfg, set(args.only or all_scenarios), results)
    finally:
        results.meta["elapsed_min"] = round((time.monotonic() - started) / 60, 1)
        results.meta["load_average_at_end"] = machine.load_average()
        raw = Path(tempfile.gettempdir()) / "rota-bench" / f"results-{int(time.time())}.json"
        results.save(raw)
        say(f"raw results: {raw}")
    write_report(results, out, out.with_suffix(".png"))
    say(f"wrote {out} and {out.with_suffix('.png')} in {results.meta['elapsed_min']} min")
    return 1 if results.failures else 0
