"""``make run``: rota on its embedded SQLite default, with a worker killed mid-run.

Enqueues example runs, starts worker w1, waits until w1 is inside the long ETL run,
starts worker w2, SIGKILLs w1, and shows w2 take the run over once w1's lease expires:
with a new fencing token, finishing it. Everything is read back from the database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

import rota
from rota.domain.runs import Run

DB_FILE = Path("rota-demo.db")
DB_URL = f"sqlite:///{DB_FILE}"
LEASE_SECONDS = 3.0
DEADLINE_SECONDS = 60.0
console = Console(width=110)


def _worker(node_id: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "ROTA_DATABASE_URL": DB_URL,
        "ROTA_LEASE_SECONDS": str(LEASE_SECONDS),
        "ROTA_REAP_INTERVAL_SECONDS": "0.5",
        "ROTA_LEADER_LEASE_SECONDS": "1.5",
    }
    command = [
        sys.executable,
        "-m",
        "rota",
        "--log-level",
        "error",
        "worker",
        "--app",
        "rota.examples:app",
        "--node-id",
        node_id,
        "--concurrency",
        "4",
    ]
    return subprocess.Popen(command, env=env)


def _wait_for(what: str, check: Callable[[], bool], deadline: float) -> None:
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"demo: gave up waiting for {what}")
        time.sleep(0.1)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]


def main() -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB_FILE}{suffix}").unlink(missing_ok=True)
    from rota.examples import app as examples

    app = rota.App(DB_URL, settings=rota.Settings(database_url=DB_URL))
    app.registry = examples.registry  # same handlers, this process's own store
    deadline = time.monotonic() + DEADLINE_SECONDS
    console.rule("[bold]rota demo[/] on SQLite: " + DB_URL)

    etl = app.enqueue("long-etl", {"steps": 12})
    others = [app.enqueue("send-report", {"day": f"2026-11-{d:02d}"}) for d in (27, 28, 29)]
    others += [app.enqueue("export-csv", {"rows": 500}), app.enqueue("flaky", {})]
    console.print(f"{_stamp()} enqueued long-etl as run {etl}, and runs {others}")

    workers = {"w1": _worker("w1")}
    console.print(f"{_stamp()} started worker w1 (pid {workers['w1'].pid})")
    _wait_for(
        "w1 to be running the ETL run",
        lambda: app.get_run(etl).state is rota.RunState.RUNNING and bool(app.run_detail(etl).logs),
        deadline,
    )
    workers["w2"] = _worker("w2")
    console.print(f"{_stamp()} started worker w2 (pid {workers['w2'].pid})")

    run = app.get_run(etl)
    workers["w1"].send_signal(signal.SIGKILL)
    workers["w1"].wait()
    console.print(
        f"{_stamp()} [red]SIGKILL w1[/] while it runs ETL run {etl} "
        f"(fence {run.fence}, lease until {run.lease_expires_at:%H:%M:%S.%f})"
    )

    killed_at = time.monotonic()
    _wait_for("w2 to take the ETL run over", lambda: app.get_run(etl).fence > run.fence, deadline)
    taken = app.get_run(etl)
    console.print(
        f"{_stamp()} w1's lease expired by the database clock; w2 reclaimed run {etl} with "
        f"fence {taken.fence}, {time.monotonic() - killed_at:.1f} s after the kill "
        f"(lease {LEASE_SECONDS:g} s)"
    )

    def finished(run_id: int) -> bool:
        return app.get_run(run_id).state.is_terminal

    _wait_for("every run to finish", lambda: all(map(finished, [etl, *others])), deadline)
    run = app.get_run(etl)
    console.print(
        f"{_stamp()} every run finished; the ETL run is [bold green]{run.state.value}[/] "
        f"with w2's result {run.result}; "
        f"a late write by w1 (fence {run.fence - 1}) would be refused"
    )
    workers["w2"].send_signal(signal.SIGTERM)
    workers["w2"].wait(timeout=30)
    _summary(app, [etl, *others])
    app.close()


def _summary(app: rota.App, run_ids: list[int]) -> None:
    table = Table("run", "handler", "state", "attempts (worker, fence, outcome)", "result / error")
    for run_id in run_ids:
        detail = app.run_detail(run_id)
        run: Run = detail.run
        history = ", ".join(f"{a.worker_id} f{a.fence} {a.outcome.value}" for a in detail.attempts)
        table.add_row(
            str(run.id),
            run.handler,
            run.state.value,
            history,
            str(run.result if run.error is None else run.error)[:60],
        )
    console.print(table)
    console.print(
        f"Look closer: [bold].venv/bin/rota server --dev --db {DB_URL} --app rota.examples:app[/], "
        f"then in another terminal [bold]export ROTA_TOKEN=$(.venv/bin/rota token create); "
        f".venv/bin/rota runs show {run_ids[0]}[/] (attempts, fences, durations) and "
        f"[bold].venv/bin/rota runs logs {run_ids[0]}[/]"
    )


if __name__ == "__main__":
    main()
