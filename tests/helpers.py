"""Waiting without sleeping blindly: poll a condition until it holds or a deadline
passes, and fail loudly with what was last seen."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
REPO = Path(__file__).resolve().parent.parent


def wait_until(check: Callable[[], T], timeout: float = 20.0, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for {what} (last: {value!r})"
            )
        time.sleep(0.02)


async def eventually(
    check: Callable[[], Awaitable[T]], timeout: float = 20.0, what: str = "condition"
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for {what} (last: {value!r})"
            )
        await asyncio.sleep(0.02)


def start_worker(
    db_url: str,
    node_id: str,
    marks: Path,
    *,
    lease_seconds: float = 2.0,
    concurrency: int = 8,
    extra_env: dict[str, str] | None = None,
    log_file: Path | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """A real worker process (``rota worker``) running tests/apps/proc_app.py's
    handlers. Tests start them through the ``worker_processes`` fixture
    (:class:`WorkerProcesses`), which stops them; the chaos harness calls this itself."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ROTA_DATABASE_URL": db_url,
        "ROTA_LEASE_SECONDS": str(lease_seconds),
        "ROTA_REAP_INTERVAL_SECONDS": "0.2",
        # The reaper is a leader duty: when the killed worker was the leader, a new one
        # must be elected before the run lease runs out.
        "ROTA_LEADER_LEASE_SECONDS": str(lease_seconds / 2),
        "ROTA_SHUTDOWN_GRACE_SECONDS": "5",
        "ROTA_TEST_MARKS": str(marks),
        **(extra_env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "rota",
        "--log-level",
        "warning",
        "worker",
        "--app",
        "tests.apps.proc_app:app",
        "--node-id",
        node_id,
        "--concurrency",
        str(concurrency),
        *args,
    ]
    if log_file is None:
        return subprocess.Popen(command, env=env, cwd=REPO)
    with log_file.open("ab") as log:
        return subprocess.Popen(command, env=env, cwd=REPO, stderr=log, stdout=log)


class WorkerProcesses:
    """Worker processes (:func:`start_worker`) on one database, each writing what it
    did under ``marks``. The ``worker_processes`` fixture hands one to a test and kills
    whatever still runs when the test ends, pass or fail."""

    def __init__(self, db_url: str, marks: Path) -> None:
        self.db_url = db_url
        self.marks = marks
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, node_id: str, **options: Any) -> subprocess.Popen[bytes]:
        """Start a worker named ``node_id`` (options as :func:`start_worker`'s)."""
        proc = start_worker(self.db_url, node_id, self.marks, **options)
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        """Kill every worker this started that still runs, and reap them."""
        stop_all(self.started)


def stop_all(processes: list[subprocess.Popen[bytes]]) -> None:
    for proc in processes:
        if proc.poll() is None:
            proc.kill()
    for proc in processes:
        proc.wait(timeout=10)


def stop_gracefully(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGTERM (so a server flushes its log and shuts down as in production), then a
    kill if it has not ended within ``timeout``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def read_marks(marks: Path) -> list[list[str]]:
    """Every line every worker process wrote, split into words."""
    lines = []
    for path in sorted(marks.glob("*.log")):
        lines += [line.split() for line in path.read_text().splitlines() if line.strip()]
    return lines
