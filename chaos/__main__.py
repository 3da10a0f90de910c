"""The chaos runner: every scenario (or those named) at one size, each in a process
group of its own with a hard wall-clock limit and a database of its own, dropped after.

    python -m chaos [--size small|full] [--only NAME,NAME] [--skip NAME,...] [--report PATH]

Exits 1 if any scenario failed or ran out of time; writes the figures to the report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaos import pg, report, scenarios
from chaos.harness import SIZES

REPO = Path(__file__).resolve().parent.parent


def run_one(name: str, size: str, keep: Path | None) -> dict[str, Any]:
    module = scenarios.load(name)
    limit = module.TIME_LIMIT[size]
    workdir = Path(tempfile.mkdtemp(prefix=f"rota-chaos-{name}-", dir=keep))
    db_url = (
        pg.create_database() if module.BACKEND == "postgres" else f"sqlite:///{workdir}/rota.db"
    )
    result_path = workdir / "result.json"
    started = time.monotonic()
    print(f"chaos: {name} ({size}, limit {limit} s) in {workdir}", flush=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "chaos.one", name, size, db_url, str(workdir), str(result_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,  # its own process group: the workers it starts join it
    )
    timed_out = False
    try:
        child.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Whatever happened, nothing the scenario started outlives it (stopped ones too).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        if module.BACKEND == "postgres":
            pg.drop_database(db_url)
    if result_path.exists():
        result: dict[str, Any] = json.loads(result_path.read_text())
    else:
        result = {"name": name, "size": size, "passed": False, "figures": {}, "notes": []}
        result["failures"] = [
            f"ran out of its {limit} s wall-clock limit and was killed"
            if timed_out
            else f"the scenario process ended with code {child.returncode} and no result"
        ]
    result["seconds"] = round(time.monotonic() - started, 1)
    result["title"] = module.TITLE
    result["workdir"] = str(workdir)
    if keep is None and result["passed"]:
        shutil.rmtree(workdir, ignore_errors=True)  # a failure's logs stay, as evidence
        result["workdir"] = "(removed)"
    verdict = "PASS" if result["passed"] else "FAIL"
    print(f"chaos: {name}: {verdict} in {result['seconds']} s", flush=True)
    for failure in result["failures"]:
        print(f"    - {failure}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument("--size", choices=SIZES, default=os.environ.get("CHAOS_SIZE", "full"))
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--skip", default="", help="comma-separated scenario names")
    parser.add_argument("--report", type=Path, default=None, help="e.g. docs/reliability.md")
    parser.add_argument("--keep", type=Path, default=None, help="folder for logs (default tmp)")
    args = parser.parse_args(argv)
    known = scenarios.names()
    chosen = [n for n in args.only.split(",") if n] or known
    skipped = [n for n in args.skip.split(",") if n]
    for name in chosen + skipped:
        if name not in known:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(known)}")
    chosen = [n for n in chosen if n not in skipped]
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    started_at = datetime.now(UTC)
    results = [run_one(name, args.size, args.keep) for name in chosen]
    if args.report is not None:
        report.write(args.report, args.size, started_at, results, skipped)
    failed = [r["name"] for r in results if not r["passed"]]
    print(f"chaos: {len(results) - len(failed)} passed, {len(failed)} failed {failed or ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
