"""``python -m bench.defaults [--jobs N] [--repeats N] [--processes N ...] [--write]``

Defaults against best settings, rota and PgQueuer in the same run (issue 15: "defaults
are fast"). Four configurations drain the same pre-enqueued no-op runs, each in a fresh
database, the order rotating between repeats so neither system always goes first:

- rota as shipped: ``App.work`` with ``app.worker_options()`` untouched and the event
  loop ``rota worker`` picks (rota.engine.loops: uvloop when installed), Settings defaults,
  logging at ``rota worker``'s default level, info (bench.procs.quiet_logging: what
  passes the level is built and dropped, not printed; every bench worker does this);
- rota best tuned: concurrency 200 per process on uvloop (the bench sweep's usual pick);
- PgQueuer at its best documented settings (bench.peers.pgqueuer: batch 100, uvloop);
- PgQueuer at its defaults (``QueueManager.run`` with its default batch size, asyncio).

Medians with min..max. ``--write`` replaces the section between the defaults markers in
docs/benchmarks.md (``make bench`` runs this after the main bench).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING

from bench import sections
from bench.config import BenchConfig
from bench.results import say

if TYPE_CHECKING:
    from bench.systems import System

REPORT = sections.REPORT
START, END = sections.markers("bench.defaults")


def configurations() -> list[System]:
    from bench import rota_runner
    from bench.peers import pgqueuer
    from bench.systems import PGQUEUER, RotaWorkerSettings, System, rota_system
    from rota.engine.loops import resolve

    def shipped_kwargs(url: str, index: int) -> dict[str, object]:
        return {"url": url, "concurrency": None, "node_id": f"bench-w{index}"}

    loop = resolve("auto")
    shipped = System("rota, as shipped", rota_runner, loop, shipped_kwargs, f"defaults, {loop}")
    best = rota_system(RotaWorkerSettings(concurrency=200, loop="uvloop"))
    # bench.peers.pgqueuer with its drain worker at PgQueuer's defaults.
    pgq_module = ModuleType("bench.peers.pgqueuer_defaults")
    pgq_module.__dict__.update(
        {name: getattr(pgqueuer, name) for name in ("install", "prefill", "version")},
        drain_worker=pgqueuer.drain_worker_defaults,
        UNFINISHED_SQL=pgqueuer.UNFINISHED_SQL,
        SUCCEEDED_SQL=pgqueuer.SUCCEEDED_SQL,
    )
    pgq_defaults = System(
        "PgQueuer, defaults",
        pgq_module,
        "asyncio",
        settings="QueueManager.run(mode=drain), batch_size default, asyncio loop",
    )
    return [
        shipped,
        replace(best, name="rota, best tuned", settings="concurrency=200 per process, uvloop"),
        replace(PGQUEUER, name="PgQueuer, best documented", settings="batch_size=100, uvloop"),
        pgq_defaults,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.defaults")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    from bench.snapshot import pin_rota_source

    pin_rota_source()  # before anything imports rota: src/ may change during the run
    cfg = replace(BenchConfig(), jobs=args.jobs, repeats=args.repeats)
    systems = configurations()
    samples: dict[tuple[str, int], list[float]] = {}
    loads: list[float] = []
    for repeat in range(cfg.repeats):
        for processes in args.processes:
            shift = repeat % len(systems)
            for system in systems[shift:] + systems[:shift]:
                loads.append(os.getloadavg()[0])
                say(f"defaults / {system.name} / {processes} process(es) / repeat {repeat + 1}")
                samples.setdefault((system.name, processes), []).append(
                    _drain(cfg, system, processes)
                )
    text = render(systems, args.processes, samples, loads, cfg)
    print(text)
    if args.write:
        sections.replace_section(text, START, END, REPORT)
    return 0


def _drain(cfg: BenchConfig, system: System, processes: int) -> float:
    """jobs/s of one drain; tried once more if it failed (on a shared server another
    session's bench may drop this one's database under it)."""
    from bench import scenarios

    try:
        return scenarios.pg_drain_once(cfg, system, processes).jobs_per_s
    except Exception as exc:
        say(f"failed ({exc}); once more")
        return scenarios.pg_drain_once(cfg, system, processes).jobs_per_s


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}..{max(values):,.0f})"


def render(
    systems: list[System],
    counts: list[int],
    samples: dict[tuple[str, int], list[float]],
    loads: list[float],
    cfg: BenchConfig,
) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        START,
        "### Defaults against best settings (bench.defaults)",
        "",
        f"`python -m bench.defaults --jobs {cfg.jobs} --repeats {cfg.repeats}`, run on {stamp};",
        f"{os.cpu_count()} cores shared with other sessions (1-minute load "
        f"{min(loads):.1f} to {max(loads):.1f}). Drain of {cfg.jobs:,} pre-enqueued no-op runs,",
        "jobs/s, median (min..max) of the repeats; order rotated between repeats.",
        "",
        "| configuration | settings | "
        + " | ".join(f"{n} process{'es' if n > 1 else ''}" for n in counts)
        + " |",
        "| --- | --- |" + " ---: |" * len(counts),
    ]
    for s in systems:
        cells = [_cell(samples[(s.name, n)]) for n in counts]
        lines.append(f"| {s.name} | {s.settings} | " + " | ".join(cells) + " |")
    lines.append("")
    for n in counts:
        shipped = statistics.median(samples[("rota, as shipped", n)])
        best = statistics.median(samples[("rota, best tuned", n)])
        pgq = statistics.median(samples[("PgQueuer, best documented", n)])
        lines.append(
            f"- {n} process{'es' if n > 1 else ''}: rota as shipped / rota best tuned "
            f"= {shipped / best:.2f}; rota as shipped / PgQueuer best documented "
            f"= {shipped / pgq:.2f}"
        )
    lines.append(END)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
