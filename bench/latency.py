"""(c) Enqueue-to-start latency at a steady, low rate: one worker process, idle on
LISTEN/NOTIFY, and a producer enqueuing one job at a time on a fixed schedule. Each
payload carries its enqueue instant (time.time(), the same clock in both processes);
the handler records start - enqueue."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import pg
from bench.config import BenchConfig
from bench.procs import WorkerGroup
from bench.results import Results, percentile, run_async
from bench.systems import System

SETTLE_S = 1.0  # the worker reaches its idle wait before the first job
GRACE_S = 3.0  # stragglers may still start after the last enqueue
# After the steady run, single jobs after a pause: is a first run after idle (cold
# connections, a LISTEN wait at its poll timeout) slower than the rest?
IDLE_PROBES = 3
IDLE_GAP_S = 3.0


async def produce(system: System, url: str, rate: float, seconds: float) -> int:
    """Enqueue on a fixed tick schedule (no drift); returns how many were enqueued."""
    producer = system.module.LatencyProducer(url)
    await producer.open()
    try:
        await asyncio.sleep(SETTLE_S)
        interval = 1.0 / rate
        count = int(rate * seconds)
        start = time.monotonic()
        for tick in range(count):
            await asyncio.sleep(max(0.0, start + tick * interval - time.monotonic()))
            await producer.enqueue()
        for _ in range(IDLE_PROBES):
            await asyncio.sleep(IDLE_GAP_S)  # the pause is the measurement
            await producer.enqueue()
        return count + IDLE_PROBES
    finally:
        await producer.close()


def latency_once(cfg: BenchConfig, system: System) -> dict[str, Any]:
    with pg.fresh_database(cfg.admin_url, "latency") as url:
        run_async(system.module.install(url), 120)
        worker = WorkerGroup(system.module.latency_worker, [{"url": url}], system.loop)
        with worker as group:
            group.start()
            group.go()
            sent = run_async(
                produce(system, url, cfg.latency_rate, cfg.latency_seconds),
                cfg.latency_seconds + 60,
            )
            time.sleep(GRACE_S)
            group.stop()
            delays_ms = [d * 1000 for d in group.collect(timeout=60)[0]["delays"]]
    if len(delays_ms) < sent:
        raise RuntimeError(f"only {len(delays_ms)} of {sent} jobs started within {GRACE_S} s")
    # Jobs start in the order they were enqueued (one every 20 ms, or seconds apart).
    steady, after_idle = delays_ms[:-IDLE_PROBES], delays_ms[-IDLE_PROBES:]
    return {
        "p50_ms": percentile(steady, 50),
        "p99_ms": percentile(steady, 99),
        "max_ms": max(steady),
        "samples": len(steady),
        "first_ms": steady[0],  # the first job, after SETTLE_S of idling
        "after_idle_ms": max(after_idle),
    }


def latency(cfg: BenchConfig, results: Results, system: System) -> None:
    variant = f"{cfg.latency_rate:g} jobs/s for {cfg.latency_seconds:g} s"
    stats = results.attempt("latency", system.name, variant, lambda: latency_once(cfg, system))
    if stats is not None:
        results.add("latency", system.name, variant, stats["p99_ms"], unit="ms", **stats)
