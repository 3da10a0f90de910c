"""The drain measurement shared by every system: pre-enqueued runs, N worker processes,
the clock from the start line until a probe finds nothing unfinished."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bench.cpu import ServerCpu
from bench.procs import ScenarioFailed, WorkerFn, WorkerGroup

# Short enough that the end is seen within 1% of a 2 s drain, long enough that the
# probe's own queries stay far below 1% of the server's work.
PROBE_INTERVAL_S = 0.02


class Probe(Protocol):
    def scalar(self, sql: str) -> int: ...
    def backend_pids(self) -> list[int]: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class DrainSpec:
    worker_fn: WorkerFn
    worker_kwargs: list[dict[str, Any]]  # one dict per process
    open_probe: Callable[[], Probe]
    unfinished_sql: str
    loop: str = "asyncio"
    timeout_s: float = 180.0


@dataclass(frozen=True)
class DrainResult:
    jobs: int
    seconds: float
    workers_cpu_s: float
    server_cpu_s: float | None
    warnings: dict[str, int]  # what the workers logged at WARNING or above, counted
    # Claims that returned runs, over all processes; None when a worker cannot count
    # them (the peers, rota with metrics off).
    claims: int | None = None

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "seconds": round(self.seconds, 4),
            "jobs_per_s": round(self.jobs_per_s, 1),
            "workers_cpu_s": round(self.workers_cpu_s, 3),
            "server_cpu_s": None if self.server_cpu_s is None else round(self.server_cpu_s, 3),
            "warnings": self.warnings,
            "claims": self.claims,
        }


def run_drain(spec: DrainSpec, jobs: int) -> DrainResult:
    probe = spec.open_probe()
    try:
        with WorkerGroup(spec.worker_fn, spec.worker_kwargs, spec.loop) as group:
            group.start()
            server_cpu = ServerCpu(probe.backend_pids)
            server_cpu.start()
            started = group.go()
            deadline = time.monotonic() + spec.timeout_s
            polls = 0
            while probe.scalar(spec.unfinished_sql) > 0:
                group.check_errors()
                polls += 1
                if polls % 5 == 0:
                    server_cpu.sample()
                if time.monotonic() > deadline:
                    raise ScenarioFailed(f"drain not finished after {spec.timeout_s:.0f} s")
                time.sleep(PROBE_INTERVAL_S)
            seconds = time.time() - started
            server_s = server_cpu.stop()
            group.stop()
            reports = group.collect(timeout=60)
    finally:
        probe.close()
    ordered = [reports[i] for i in sorted(reports)]
    workers_cpu = sum(float(r.get("cpu_s", 0.0)) for r in ordered)
    warnings: dict[str, int] = {}
    for report in ordered:
        for message, count in report.get("warnings", {}).items():
            warnings[message] = warnings.get(message, 0) + count
    return DrainResult(jobs, seconds, workers_cpu, server_s, warnings, claims_of(ordered))


def claims_of(reports: list[dict[str, Any]]) -> int | None:
    """The processes' claims summed, or None if any of them could not count its own."""
    total = 0
    for report in reports:
        claims = report.get("claims")
        if claims is None:
            return None
        total += int(claims)
    return total
