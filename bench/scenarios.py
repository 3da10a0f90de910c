"""Bulk enqueue, the PostgreSQL drains, rota's worker sweep and the SQLite drain.

Each measurement gets a fresh database (or SQLite file), so no system pays for another's
leftovers or for its own earlier repeats.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import pg, rota_runner
from bench.caller import enqueue_in_caller
from bench.config import BenchConfig
from bench.drain import DrainResult, DrainSpec, run_drain
from bench.procs import WorkerGroup
from bench.results import Results, run_async
from bench.systems import RotaWorkerSettings, System, rota_system

SETUP_TIMEOUT_S = 120.0


def bulk_enqueue(cfg: BenchConfig, results: Results, system: System, batch: int) -> None:
    """(a) ``cfg.jobs`` runs in calls of ``batch``; jobs/s over the calls alone."""
    variant = f"{cfg.jobs:,} in calls of {batch:,}"

    def measure() -> float:
        with pg.fresh_database(cfg.admin_url, "enqueue") as url:
            run_async(system.module.install(url), SETUP_TIMEOUT_S)
            caller = {
                "module": system.module.__name__,
                "url": url,
                "total": cfg.jobs,
                "batch": batch,
            }
            with WorkerGroup(enqueue_in_caller, [caller]) as one:
                one.start()
                one.go()
                seconds = one.collect(cfg.scenario_timeout_s)[0]["seconds"]
            with pg.Probe(url) as probe:
                stored = probe.scalar(system.module.STORED_SQL)
        if stored != cfg.jobs:
            raise RuntimeError(f"{stored} jobs stored, {cfg.jobs} enqueued")
        return cfg.jobs / seconds

    rate = results.attempt("enqueue", system.name, variant, measure)
    if rate is not None:
        results.add("enqueue", system.name, variant, rate, unit="jobs/s")


def _drain_spec(cfg: BenchConfig, system: System, url: str, processes: int) -> DrainSpec:
    return DrainSpec(
        system.module.drain_worker,
        [system.worker_kwargs(url, i) for i in range(processes)],
        lambda: pg.Probe(url),
        system.module.UNFINISHED_SQL,
        loop=system.loop,
        timeout_s=cfg.scenario_timeout_s,
    )


Prefill = Callable[[str, int], Coroutine[Any, Any, None]]


def pg_drain_once(
    cfg: BenchConfig,
    system: System,
    processes: int,
    analyze: bool = False,
    prefill: Prefill | None = None,
    watch: Callable[[str], AbstractContextManager[object]] | None = None,
) -> DrainResult:
    """One drain in a fresh database. ``prefill`` replaces the system's own (e.g. runs
    with concurrency keys); ``watch(url)`` is held open around the drain (a sampler)."""
    with pg.fresh_database(cfg.admin_url, "drain") as url:
        run_async(system.module.install(url), SETUP_TIMEOUT_S)
        run_async((prefill or system.module.prefill)(url, cfg.jobs), SETUP_TIMEOUT_S)
        if analyze:
            # What autovacuum's auto-analyze does on a stock server soon after a bulk
            # enqueue (it is off on the CI server): plans then follow real statistics.
            with pg.Probe(url) as probe:
                probe.execute("ANALYZE")
        with watch(url) if watch else contextlib.nullcontext():
            result = run_drain(_drain_spec(cfg, system, url, processes), cfg.jobs)
        with pg.Probe(url) as probe:
            succeeded = probe.scalar(system.module.SUCCEEDED_SQL)
            # rota keeps one attempt row per execution: more than N means a double run.
            attempts_sql = getattr(system.module, "ATTEMPTS_SQL", None)
            executions = probe.scalar(attempts_sql) if attempts_sql else cfg.jobs
    if succeeded != cfg.jobs:
        raise RuntimeError(f"{succeeded} of {cfg.jobs} jobs recorded as succeeded")
    if executions != cfg.jobs:
        raise RuntimeError(f"{executions} executions recorded for {cfg.jobs} jobs")
    return result


def pg_drain(cfg: BenchConfig, results: Results, system: System, processes: int) -> None:
    """(b) drain ``cfg.jobs`` pre-enqueued no-op jobs with ``processes`` workers."""
    variant = f"{processes} process{'es' if processes > 1 else ''}{system.variant_note}"
    result = results.attempt(
        "drain", system.name, variant, lambda: pg_drain_once(cfg, system, processes)
    )
    if result is not None:
        results.add("drain", system.name, variant, result.jobs_per_s, **result.as_dict())


def pg_drain_analyzed(cfg: BenchConfig, results: Results, system: System) -> None:
    """(b') the 2-process drain once more, after ANALYZE of the freshly filled tables."""
    processes = max(cfg.worker_counts)
    variant = f"{processes} processes, after ANALYZE"
    result = results.attempt(
        "drain-analyzed",
        system.name,
        variant,
        lambda: pg_drain_once(cfg, system, processes, analyze=True),
    )
    if result is not None:
        results.add("drain-analyzed", system.name, variant, result.jobs_per_s, **result.as_dict())


def sweep_rota_workers(cfg: BenchConfig, results: Results) -> RotaWorkerSettings:
    """Try each concurrency x event loop once on the 2-process drain; keep the fastest.
    The sweep's own numbers are reported too, so the choice can be checked."""
    processes = max(cfg.worker_counts)
    best: tuple[float, RotaWorkerSettings] | None = None
    for loop in cfg.rota_loops:
        for concurrency in cfg.rota_concurrency:
            worker = RotaWorkerSettings(concurrency=concurrency, loop=loop)
            system = rota_system(worker)
            variant = f"concurrency={concurrency}, {loop}"
            result = results.attempt(
                "sweep", "rota", variant, lambda s=system: pg_drain_once(cfg, s, processes)
            )
            if result is None:
                continue
            results.add("sweep", "rota", variant, result.jobs_per_s, **result.as_dict())
            if best is None or result.jobs_per_s > best[0]:
                best = (result.jobs_per_s, worker)
    return best[1] if best else RotaWorkerSettings()


def sqlite_drain(
    cfg: BenchConfig, results: Results, worker: RotaWorkerSettings, processes: int
) -> None:
    """(d) the same drain on rota's SQLite store, one file per measurement."""
    system = replace(rota_system(worker), name="rota (SQLite)")
    variant = f"{processes} process{'es' if processes > 1 else ''}"

    def measure() -> DrainResult:
        with tempfile.TemporaryDirectory(prefix="rota-bench-") as tmp:
            url = f"sqlite:///{Path(tmp) / 'bench.db'}"
            run_async(rota_runner.prefill(url, cfg.jobs), SETUP_TIMEOUT_S)
            spec = DrainSpec(
                rota_runner.drain_worker,
                [system.worker_kwargs(url, i) for i in range(processes)],
                lambda: rota_runner.SqliteProbe(url),
                rota_runner.UNFINISHED_SQL,
                loop=system.loop,
                timeout_s=cfg.scenario_timeout_s,
            )
            result = run_drain(spec, cfg.jobs)
            with rota_runner.SqliteProbe(url) as probe:
                succeeded = probe.scalar(rota_runner.SUCCEEDED_SQL)
        if succeeded != cfg.jobs:
            raise RuntimeError(f"{succeeded} of {cfg.jobs} runs recorded as succeeded")
        return result

    result = results.attempt("sqlite-drain", system.name, variant, measure)
    if result is not None:
        results.add("sqlite-drain", system.name, variant, result.jobs_per_s, **result.as_dict())
