"""Where a rota worker spends its time: one 1-process drain under cProfile.

cProfile slows Python code down (not the database), so the rate measured here is lower
than the real one; the shares are what matter. The profiler counts CPU time of the
worker process only (time.process_time): waiting for the server is not in it. Self time
is grouped by the package the code lives in, which separates rota's own work from the
driver's and the event loop's.
"""

from __future__ import annotations

import argparse
import json
import pstats
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import pg, rota_runner
from bench.config import BenchConfig
from bench.drain import DrainSpec, run_drain
from bench.results import Results, run_async
from bench.systems import RotaWorkerSettings, rota_system

# (label, path fragment), first match wins; the rest is "other".
PACKAGES = (
    ("rota", "/rota/"),  # src/rota or the run's pinned copy of it (bench.snapshot)
    ("psycopg", "/psycopg"),
    ("structlog", "/structlog/"),
    ("asyncio / selectors", "/asyncio/"),
    ("asyncio / selectors", "selectors.py"),
    ("uvloop", "uvloop"),
    ("json", "/json/"),
    ("datetime / zoneinfo", "zoneinfo"),
)
TOP = 15


def _package(filename: str) -> str:
    if filename.startswith("~") or filename == "":
        return "builtins (C)"
    for label, fragment in PACKAGES:
        if fragment in filename:
            return label
    return "other"


def summarize(stats_path: Path) -> dict[str, Any]:
    stats = pstats.Stats(str(stats_path))
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in entries.values()) or 1.0
    by_package: dict[str, float] = {}
    for (filename, _, _), (_, _, tt, _, _) in entries.items():
        label = _package(filename)
        by_package[label] = by_package.get(label, 0.0) + tt
    top = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:TOP]
    return {
        "total_s": round(total, 3),
        "by_package": {
            k: round(v / total, 3)
            for k, v in sorted(by_package.items(), key=lambda kv: kv[1], reverse=True)
        },
        "top_self": [
            {
                "function": f"{Path(f).name}:{line}({name})" if not f.startswith("~") else name,
                "calls": nc,
                "self_s": round(tt, 3),
                "cum_s": round(ct, 3),
                "share": round(tt / total, 3),
            }
            for (f, line, name), (_, nc, tt, ct, _) in top
        ],
    }


def profile_rota(
    cfg: BenchConfig, results: Results, worker: RotaWorkerSettings, keep: Path | None = None
) -> None:
    """``keep``: where to copy the raw profile too, for reading it with pstats."""
    system = rota_system(worker)

    def measure() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="rota-profile-") as tmp:
            stats_path = Path(tmp) / "worker.prof"
            with pg.fresh_database(cfg.admin_url, "profile") as url:
                run_async(rota_runner.install(url), 120)
                run_async(rota_runner.prefill(url, cfg.jobs), 120)
                kwargs = {**system.worker_kwargs(url, 0), "profile_path": str(stats_path)}
                spec = DrainSpec(
                    rota_runner.drain_worker,
                    [kwargs],
                    lambda: pg.Probe(url),
                    rota_runner.UNFINISHED_SQL,
                    loop=system.loop,
                    timeout_s=cfg.scenario_timeout_s * 2,
                )
                drained = run_drain(spec, cfg.jobs)
            if keep is not None:
                shutil.copyfile(stats_path, keep)
            return {**summarize(stats_path), **drained.as_dict()}

    variant = f"1 process, {worker.describe()}, under cProfile"
    summary = results.attempt("profile", "rota", variant, measure)
    if summary is not None:
        results.add("profile", "rota", variant, summary["jobs_per_s"], **summary)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.profiling [--jobs N] [--keep PATH]``: one profiled drain,
    its summary printed as JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.profiling")
    parser.add_argument("--jobs", type=int, default=BenchConfig().jobs)
    parser.add_argument("--keep", type=Path, help="copy the raw cProfile stats here")
    args = parser.parse_args(argv)
    results = Results()
    profile_rota(replace(BenchConfig(), jobs=args.jobs), results, RotaWorkerSettings(), args.keep)
    print(json.dumps(results.records, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
