"""(i) Issue 11: what observability costs.

- The 2-process PostgreSQL drain with metrics on and with metrics off (``ROTA_METRICS``
  switched in the worker processes), alternating within each repeat so drift on the
  machine hits both alike; the overhead is 1 - on/off of the medians (target < 3%).
  Both run at the bench's WARNING log level, so the finished-run line (info) is
  filtered in both: this measures the instruments.
- The time to render /metrics with 200 handlers on 20 queues, every handler having
  finished runs in every outcome (the most series those names can make), plus the
  leader's cluster gauges for those queues.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from bench.config import BenchConfig
from bench.results import Results
from bench.scenarios import pg_drain_once
from bench.systems import RotaWorkerSettings, System, rota_system

HANDLERS = 200
QUEUES = 20
SCRAPES = 50


def _system(worker: RotaWorkerSettings, metrics: bool) -> System:
    base = rota_system(worker)

    def kwargs(url: str, index: int) -> dict[str, Any]:
        return {**base.worker_kwargs(url, index), "metrics": metrics}

    return replace(base, name=f"rota, metrics {'on' if metrics else 'off'}", worker_kwargs=kwargs)


def metrics_overhead(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    processes = max(cfg.worker_counts)
    for repeat in range(cfg.repeats):
        order = (True, False) if repeat % 2 == 0 else (False, True)
        for metrics in order:
            system = _system(worker, metrics)
            variant = f"{processes} processes, metrics {'on' if metrics else 'off'}"
            result = results.attempt(
                "metrics-drain", "rota", variant, lambda s=system: pg_drain_once(cfg, s, processes)
            )
            if result is not None:
                results.add("metrics-drain", "rota", variant, result.jobs_per_s, **result.as_dict())


def scrape_time(cfg: BenchConfig, results: Results) -> None:
    def measure() -> dict[str, float]:
        _populate()
        from rota.observe import exposition

        timings = []
        size = 0
        for _ in range(SCRAPES):
            started = time.perf_counter()
            size = len(exposition.render(None))
            timings.append(time.perf_counter() - started)
        return {"median_ms": statistics.median(timings) * 1000, "bytes": size}

    measured = results.attempt("metrics-scrape", "rota", f"{HANDLERS} handlers", measure)
    if measured is not None:
        results.add(
            "metrics-scrape",
            "rota",
            f"{HANDLERS} handlers x {QUEUES} queues",
            measured["median_ms"],
            unit="ms",
            bytes=measured["bytes"],
            scrapes=SCRAPES,
        )


def _populate() -> None:
    """Every series 200 handlers on 20 queues can make, in this (the bench) process."""
    from bench.procs import quiet_logging
    from rota.domain.runs import ClaimedRun, Outcome
    from rota.domain.states import AttemptOutcome, RunState
    from rota.domain.stats import QueueCount
    from rota.observe import hooks

    quiet_logging()  # the finished-run lines of the fake runs below are not wanted
    hooks.set_enabled(True)
    now = datetime.now(UTC)
    outcomes = [
        RunState.SUCCEEDED,
        RunState.FAILED,
        RunState.RETRYING,
        RunState.TIMED_OUT,
        RunState.CANCELLED,
        RunState.DEAD_LETTERED,
    ]
    for h in range(HANDLERS):
        queue = f"queue-{h % QUEUES}"
        run = ClaimedRun(
            h, f"handler-{h}", None, queue, 1, 3, 1, None, 0, None, now, None, None, 0.01
        )
        hooks.runs_claimed([run])
        hooks.runs_let_go([run])
        for state in outcomes:
            outcome = Outcome(h, 1, state, AttemptOutcome.SUCCEEDED)
            hooks.runs_finished([(run, outcome, 0.02)], {run.run_id}, "bench")
        hooks.runs_enqueued([], [])
    counts = [
        QueueCount("default", f"queue-{q}", state, 10, now)
        for q in range(QUEUES)
        for state in (RunState.PENDING, RunState.RUNNING, RunState.RETRYING, RunState.DEAD_LETTERED)
    ]
    hooks.OBSERVER.cluster.publish(counts, [], now)
