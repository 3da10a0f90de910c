"""``python -m bench [--quick] [--sustain-minutes N] [--only SCENARIO ...]``

Runs every scenario against one PostgreSQL server, then writes docs/benchmarks.md and
docs/benchmarks.png (a ``--quick`` smoke run writes to a temporary directory instead, so
it never overwrites real numbers). Raw results are saved as JSON in the temp directory;
``--report-only FILE`` re-renders a report from such a file.

This module only parses arguments and pins the rota source (bench.snapshot) before
anything imports rota; the run itself is bench.runner.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.pg import ADMIN_URL

SCENARIOS = (
    "enqueue",
    "drain",
    "latency",
    "sqlite",
    "limited",
    "profile",
    "sustain",
    "cron",
    "api",
    "metrics",
    "dashboard",
    "webhooks",
    "rates",
    "memory",
    "claimsize",
    "retire",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="everything small, once (smoke test)")
    parser.add_argument("--sustain-minutes", type=float, help="length of (e); default 5")
    parser.add_argument("--repeats", type=int, help="repeats of (a), (b), (d); default 3")
    parser.add_argument("--jobs", type=int, help="jobs per enqueue/drain; default 20000")
    parser.add_argument("--memory-runs", type=int, help="runs drained in (n); default 1000000")
    parser.add_argument("--retire-runs", type=int, help="runs in (r)'s day; default 1000000")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, help="run only these")
    parser.add_argument("--admin-url", default=ADMIN_URL, help="database to create DBs from")
    parser.add_argument("--out", type=Path, help="report path (default docs/benchmarks.md)")
    parser.add_argument("--report-only", type=Path, metavar="RESULTS_JSON")
    parser.add_argument(
        "--no-snapshot", action="store_true", help="import rota from src/ live, not a copy"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    source = "the rota on sys.path, imported live"
    if not args.no_snapshot and not args.report_only:
        from bench.snapshot import pin_rota_source

        source = pin_rota_source()
    from bench.runner import run  # imports rota: only after the source is pinned

    command = " ".join(["python -m bench", *(sys.argv[1:] if argv is None else argv)])
    return run(args, command, source, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main())
