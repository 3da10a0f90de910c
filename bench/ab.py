"""``python -m bench.ab --before REV --after REV [--repeats N] [--jobs N] [--write]``

An A/B of rota against itself: two revisions' src/rota, measured with bench's own
scenario code (bulk enqueue, the 2-process PostgreSQL drain, the keyed drain beside a
plain one, pickup latency, and the SQLite drain), rota only, no peers. The machine is
shared and noisy, so the two sides are INTERLEAVED (before, after, after, before, ...):
whatever load comes and goes falls on both alike, and the after/before ratio of the
medians stays fair.

Each measurement runs in a child process that pins its revision's source first
(bench.snapshot), so the two rotas never share an interpreter. ``--write`` puts the
result in docs/benchmarks.md between the A/B markers, leaving the rest of the file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess  # nosec B404 - runs git and this module, with fixed arguments
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from bench import sections

ROOT = Path(__file__).resolve().parent.parent
REPORT = sections.REPORT
START, END = sections.markers("bench.ab")
CHILD_TIMEOUT_S = 600
# metric -> (scenario, unit, True when higher is better)
METRICS: dict[str, tuple[str, str, bool]] = {
    "enqueue jobs/s (calls of 1,000)": ("enqueue", "jobs/s", True),
    "enqueue jobs/s (one call of 20,000)": ("enqueue", "jobs/s", True),
    "drain jobs/s (PostgreSQL, 2 processes)": ("drain", "jobs/s", True),
    # CPU per run of the 2-process drain: the workers' and the server's backends'. On two
    # cores their sum bounds the drain rate (issue 24), and it is steadier than jobs/s.
    "PostgreSQL worker CPU µs/job (2 processes)": ("drain", "µs", False),
    "PostgreSQL server CPU µs/job (2 processes)": ("drain", "µs", False),
    # (f)'s keyed drain, and its ratio to the plain drain measured just before it.
    "keyed drain jobs/s (2 processes, 100 keys x limit 5)": ("keyed", "jobs/s", True),
    "keyed / plain drain": ("keyed", "ratio", True),
    # A cron slot's runs (job_id and slot_at set, all due at one instant) drained by 2
    # processes, beside a plain drain of as many runs measured just before it (issue 25).
    "slot drain jobs/s (2 processes)": ("slot", "jobs/s", True),
    "slot / plain drain": ("slot", "ratio", True),
    "slot drain server CPU µs/job": ("slot", "µs", False),
    "plain drain server CPU µs/job (beside slot)": ("slot", "µs", False),
    "pickup latency p50 ms": ("latency", "ms", False),
    "pickup latency p99 ms": ("latency", "ms", False),
    "pickup after 3 s idle ms (worst of 3)": ("latency", "ms", False),
    "drain jobs/s (SQLite, 1 process)": ("sqlite", "jobs/s", True),
    "drain jobs/s (SQLite, 2 processes)": ("sqlite", "jobs/s", True),
    # The worker processes' CPU per run: what bounds a quiet machine's SQLite drain (no
    # server), and far steadier than jobs/s on a loaded one.
    "SQLite worker CPU µs/job (1 process)": ("sqlite", "µs", False),
    "SQLite worker CPU µs/job (2 processes)": ("sqlite", "µs", False),
}
SCENARIOS = ("enqueue", "drain", "keyed", "slot", "latency", "sqlite")


# -- the child: one measurement of one revision ---------------------------------
def measure(scenario: str, jobs: int) -> dict[str, float]:
    """Runs in the child, after the revision's source is pinned."""
    from dataclasses import replace

    from bench import scenarios
    from bench.config import BenchConfig
    from bench.latency import latency_once
    from bench.results import Results
    from bench.systems import RotaWorkerSettings, rota_system

    cfg = replace(BenchConfig(), jobs=jobs, repeats=1)
    worker = RotaWorkerSettings()  # concurrency 200, asyncio: the sweep's usual pick
    system = rota_system(worker)
    results = Results()
    if scenario == "enqueue":
        scenarios.bulk_enqueue(cfg, results, system, cfg.enqueue_batch)
        scenarios.bulk_enqueue(cfg, results, system, cfg.jobs)
        small, whole = (float(r["value"]) for r in results.records if "value" in r)
        return {
            "enqueue jobs/s (calls of 1,000)": small,
            "enqueue jobs/s (one call of 20,000)": whole,
        }
    if scenario == "drain":
        drained = scenarios.pg_drain_once(cfg, system, processes=2)
        measured = {
            "drain jobs/s (PostgreSQL, 2 processes)": drained.jobs_per_s,
            "PostgreSQL worker CPU µs/job (2 processes)": drained.workers_cpu_s / jobs * 1e6,
        }
        if drained.server_cpu_s is not None:
            server = drained.server_cpu_s / jobs * 1e6
            measured["PostgreSQL server CPU µs/job (2 processes)"] = server
        return measured
    if scenario == "keyed":
        from bench.limited import KEY_LIMIT, KEYS
        from bench.rota_runner import prefill_keyed

        async def prefill(url: str, total: int) -> None:
            await prefill_keyed(url, total, KEYS, KEY_LIMIT)

        plain = scenarios.pg_drain_once(cfg, system, processes=2)
        keyed = scenarios.pg_drain_once(cfg, system, processes=2, prefill=prefill)
        return {
            "keyed drain jobs/s (2 processes, 100 keys x limit 5)": keyed.jobs_per_s,
            "keyed / plain drain": keyed.jobs_per_s / plain.jobs_per_s,
        }
    if scenario == "slot":
        from bench.rota_runner import prefill_slot

        plain = scenarios.pg_drain_once(cfg, system, processes=2)
        slot = scenarios.pg_drain_once(cfg, system, processes=2, prefill=prefill_slot)
        measured = {
            "slot drain jobs/s (2 processes)": slot.jobs_per_s,
            "slot / plain drain": slot.jobs_per_s / plain.jobs_per_s,
        }
        if slot.server_cpu_s is not None and plain.server_cpu_s is not None:
            measured["slot drain server CPU µs/job"] = slot.server_cpu_s / jobs * 1e6
            measured["plain drain server CPU µs/job (beside slot)"] = (
                plain.server_cpu_s / jobs * 1e6
            )
        return measured
    elif scenario == "latency":
        stats = latency_once(cfg, system)
        return {
            "pickup latency p50 ms": stats["p50_ms"],
            "pickup latency p99 ms": stats["p99_ms"],
            "pickup after 3 s idle ms (worst of 3)": stats["after_idle_ms"],
        }
    else:
        # 1 process too: issue 15's floor (20k runs/s) was measured with one.
        scenarios.sqlite_drain(cfg, results, worker, processes=1)
        scenarios.sqlite_drain(cfg, results, worker, processes=2)
    one, two = (r for r in results.records if "value" in r)
    return {
        "drain jobs/s (SQLite, 1 process)": float(one["value"]),
        "drain jobs/s (SQLite, 2 processes)": float(two["value"]),
        "SQLite worker CPU µs/job (1 process)": _cpu_per_job(one),
        "SQLite worker CPU µs/job (2 processes)": _cpu_per_job(two),
    }


def _cpu_per_job(record: dict[str, Any]) -> float:
    return float(record["workers_cpu_s"]) / float(record["jobs"]) * 1e6


def child(args: argparse.Namespace) -> int:
    from bench.snapshot import pin_rota_source

    pin_rota_source(Path(args.source))
    print(json.dumps(measure(args.child, args.jobs)))
    return 0


# -- the parent: interleave, then report ------------------------------------------
@dataclass(frozen=True)
class Side:
    label: str
    rev: str
    commit: str
    source: Path


def checkout(rev: str, into: Path) -> Side:
    """``rev``'s src/rota, extracted with git archive (the worktree is not touched)."""
    commit = _git("rev-parse", "--short", rev).strip()
    archive = subprocess.run(  # nosec B603 B607 - fixed git command
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src/rota"],
        check=True,
        capture_output=True,
    ).stdout
    target = into / commit
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return Side(rev, rev, commit, target / "src" / "rota")


def _git(*args: str) -> str:
    return subprocess.run(  # nosec B603 B607 - fixed git command
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout


def run_child(side: Side, scenario: str, jobs: int) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.ab", "--child", scenario]
    command += ["--source", str(side.source), "--jobs", str(jobs)]
    done = subprocess.run(  # nosec B603 - this interpreter and module
        command, cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{scenario} on {side.commit} failed:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def interleave(
    sides: tuple[Side, Side], repeats: int, jobs: int, only: tuple[str, ...] = SCENARIOS
) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {s.commit: {} for s in sides}
    loads: list[float] = []
    for repeat in range(repeats):
        for scenario in only:
            # ABBA: the order flips every repeat, so neither side always goes first.
            order = sides if repeat % 2 == 0 else sides[::-1]
            for side in order:
                loads.append(os.getloadavg()[0])
                started = time.monotonic()
                for metric, value in run_child(side, scenario, jobs).items():
                    samples[side.commit].setdefault(metric, []).append(value)
                print(
                    f"[ab] repeat {repeat + 1}/{repeats} {scenario} {side.label} ({side.commit})"
                    f" in {time.monotonic() - started:.0f} s, load {loads[-1]:.1f}",
                    file=sys.stderr,
                    flush=True,
                )
    return {"samples": samples, "loads": loads}


def table(sides: tuple[Side, Side], measured: dict[str, Any]) -> list[str]:
    before, after = sides
    lines = [
        f"| metric | before {before.commit} (median) | after {after.commit} (median) "
        "| after/before | within 5% |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for metric, (_, unit, higher_is_better) in METRICS.items():
        if metric not in measured["samples"][before.commit]:
            continue
        b = statistics.median(measured["samples"][before.commit][metric])
        a = statistics.median(measured["samples"][after.commit][metric])
        ratio = a / b
        worse = (1 - ratio) if higher_is_better else (ratio - 1)
        verdict = "yes" if worse <= 0.05 else f"no ({worse:.1%} worse)"
        digits = 3 if unit == "ratio" else 1
        lines.append(f"| {metric} | {b:,.{digits}f} | {a:,.{digits}f} | {ratio:.3f} | {verdict} |")
    return lines


def section(sides: tuple[Side, Side], measured: dict[str, Any], args: argparse.Namespace) -> str:
    loads = measured["loads"]
    cores = os.cpu_count()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    raw = {
        side.commit: {m: [round(v, 1) for v in values] for m, values in samples.items()}
        for side in sides
        for samples in [measured["samples"][side.commit]]
    }
    body = [
        START,
        "## Store redesign A/B (issue 10): before and after, interleaved",
        "",
        f"`python -m bench.ab --before {args.before} --after {args.after} "
        f"--repeats {args.repeats} --jobs {args.jobs}`, run on {stamp}.",
        "rota only; each measurement in a fresh database, in a child process pinned to its",
        "revision's src/rota; the two sides interleaved (ABBA) so the shared machine's load",
        "falls on both alike. Drains: concurrency 200, asyncio; PostgreSQL 2 worker processes,",
        "SQLite 1 and 2;",
        "latency: 50 jobs/s for 10 s, one worker.",
        f"Machine: {cores} cores, shared with other sessions running test suites; 1-minute",
        f"load average during the run {min(loads):.1f} to {max(loads):.1f} "
        f"(median {statistics.median(loads):.1f}).",
        "",
        *table(sides, measured),
        "",
        "<details><summary>every sample</summary>",
        "",
        "```json",
        json.dumps(raw, indent=1),
        "```",
        "</details>",
        END,
    ]
    return "\n".join(body) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="f1dd665", help="git revision A")
    parser.add_argument("--after", default="HEAD", help="git revision B")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000, help="runs per enqueue and drain")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--child", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory(prefix="rota-ab-") as tmp:
        sides = (checkout(args.before, Path(tmp)), checkout(args.after, Path(tmp)))
        measured = interleave(sides, args.repeats, args.jobs, tuple(args.only))
    text = section(sides, measured, args)
    print(text)
    if args.write:
        sections.replace_section(text, START, END, REPORT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
