"""What a scenario works with: its database, the worker processes it starts (killed
whatever happens), SQL on the database, and the figures and failures it reports."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from tests.apps.proc_app import app as proc_app
from tests.helpers import read_marks, start_worker

import rota
from chaos.pg import APPLICATION_NAME
from rota.errors import StoreUnavailable

T = TypeVar("T")
SIZES = ("small", "full")
UNRETRIEVED = "Task exception was never retrieved"


class ScenarioFailed(AssertionError):
    """A check that makes going on pointless (the scenario stops here)."""


@dataclass
class Context:
    name: str
    size: str
    db_url: str
    workdir: Path
    figures: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # Processes the scenario ended on purpose; any other that exits is a finding.
    ended_on_purpose: set[str] = field(default_factory=set)
    _app: rota.App | None = None

    @property
    def full(self) -> bool:
        return self.size == "full"

    def pick(self, small: T, full: T) -> T:
        return full if self.full else small

    @property
    def is_postgres(self) -> bool:
        return self.db_url.startswith("postgresql://")

    @property
    def marks(self) -> Path:
        folder = self.workdir / "marks"
        folder.mkdir(exist_ok=True)
        return folder

    # -- outcomes -------------------------------------------------------------
    def expect(self, ok: object, message: str) -> bool:
        """Record a failed check and go on (so one run reports every violation)."""
        if not ok:
            self.failures.append(message)
        return bool(ok)

    def require(self, ok: object, message: str) -> None:
        """A failed check after which the scenario cannot go on."""
        if not ok:
            raise ScenarioFailed(message)

    def figure(self, key: str, value: Any) -> None:
        self.figures[key] = value

    def timings(self, key: str, seconds: list[float]) -> None:
        """A list of measured seconds, with its median and maximum."""
        if not seconds:
            self.figures[key] = "none measured"
            return
        self.figures[key] = {
            "n": len(seconds),
            "median": round(statistics.median(seconds), 3),
            "max": round(max(seconds), 3),
            "all": [round(s, 3) for s in seconds],
        }

    # -- processes ------------------------------------------------------------
    def start(
        self,
        node_id: str,
        *,
        lease_seconds: float = 2.0,
        concurrency: int = 8,
        env: dict[str, str] | None = None,
        db_url: str | None = None,
        tags: tuple[str, ...] = (),
    ) -> subprocess.Popen[bytes]:
        """A worker process (tests/apps/proc_app.py's handlers) logging to its own file;
        it joins this scenario's process group, so the runner's kill reaches it."""
        extra = {"ROTA_WORKER_HEARTBEAT_SECONDS": "0.25", **(env or {})}
        proc = start_worker(
            db_url or self.db_url,
            node_id,
            self.marks,
            lease_seconds=lease_seconds,
            concurrency=concurrency,
            extra_env=extra,
            log_file=self.log_path(node_id),
            args=("--tags", ",".join(tags)) if tags else (),
        )
        self.processes[node_id] = proc
        return proc

    def log_path(self, node_id: str) -> Path:
        return self.workdir / f"{node_id}.log"

    def log_text(self, node_id: str) -> str:
        path = self.log_path(node_id)
        return path.read_text(errors="replace") if path.exists() else ""

    def signal(self, node_id: str, signum: signal.Signals) -> None:
        if signum in (signal.SIGKILL, signal.SIGTERM):
            self.ended_on_purpose.add(node_id)
        self.processes[node_id].send_signal(signum)

    def stop(self, node_id: str, timeout: float = 20.0) -> None:
        """A graceful stop (SIGTERM), then SIGKILL if it does not end in time."""
        proc = self.processes[node_id]
        self.ended_on_purpose.add(node_id)
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.failures.append(f"{node_id} did not stop within {timeout} s of SIGTERM")
                proc.kill()
                proc.wait(timeout=10)

    def unexpected_exits(self) -> list[str]:
        """Workers that ended without being asked, each with the last error it logged."""
        return [
            f"{node} (exit code {proc.returncode}: {self.last_error(node)})"
            for node, proc in self.processes.items()
            if node not in self.ended_on_purpose and proc.poll() is not None
        ]

    def last_error(self, node_id: str) -> str:
        lines = [line for line in self.log_text(node_id).splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("rota: error")]
        return (errors or lines or ["no log"])[-1][:300]

    def kill_all(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
        for proc in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def stop_all(self) -> None:
        """Every worker still running, gracefully; first noting any that died unasked."""
        died = self.unexpected_exits()
        self.expect(not died, f"worker processes exited on their own: {', '.join(died)}")
        for node in list(self.processes):
            self.stop(node)
        self.check_logs()

    def check_logs(self) -> None:
        """A background task that died unseen leaves asyncio's complaint in the log."""
        unseen = {
            node: text.count(UNRETRIEVED)
            for node in self.processes
            if UNRETRIEVED in (text := self.log_text(node))
        }
        self.expect(not unseen, f'"{UNRETRIEVED}" in worker logs: {unseen}')

    # -- the database ---------------------------------------------------------
    @property
    def app(self) -> rota.App:
        """A producer/inspector App with the worker processes' handlers."""
        if self._app is None:
            self._app = rota.App(self.db_url)
            self._app.registry = proc_app.registry
        return self._app

    def close(self) -> None:
        if self._app is not None:
            self._app.close()
            self._app = None

    def app_call(self, call: Callable[[rota.App], T], retry_for: float = 30.0) -> T:
        """``call(self.app)``, retried while the store is unreachable: while the server
        is down, and if the App's pool ever handed out a connection the server ended
        (it checks one whose socket has something to read, pool.py). Each retry is
        counted as a figure, so a dead connection handed out shows in the report."""
        deadline = time.monotonic() + retry_for
        while True:
            try:
                return call(self.app)
            except StoreUnavailable:
                key = "producer calls that failed on a dead pooled connection"
                self.figures[key] = self.figures.get(key, 0) + 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    @contextlib.contextmanager
    def connect(self) -> Iterator[Any]:
        if self.is_postgres:
            with psycopg.connect(
                self.db_url, autocommit=True, connect_timeout=5, application_name=APPLICATION_NAME
            ) as conn:
                yield conn
        else:
            path = self.db_url.removeprefix("sqlite:///")
            conn = sqlite3.connect(path, timeout=30)
            try:
                yield conn
            finally:
                conn.close()

    def sql(self, query: str, params: tuple[Any, ...] = (), retry_for: float = 30.0) -> list[Any]:
        """Rows of ``query`` on a connection of its own. Retried while the server is
        away (a restart scenario reads through its own faults)."""
        if not self.is_postgres:
            query = query.replace("%s", "?")
        deadline = time.monotonic() + retry_for
        while True:
            try:
                with self.connect() as conn:
                    cursor = conn.execute(query, params)
                    return list(cursor.fetchall()) if cursor.description else []
            except (psycopg.OperationalError, sqlite3.OperationalError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def scalar(self, query: str, params: tuple[Any, ...] = ()) -> Any:
        rows = self.sql(query, params)
        return rows[0][0] if rows else None

    def marks_lines(self) -> list[list[str]]:
        return read_marks(self.marks)

    # -- waiting --------------------------------------------------------------
    def wait(
        self,
        check: Callable[[], T],
        timeout: float,
        what: str | Callable[[], str],
        poll: float = 0.05,
    ) -> T:
        """Poll ``check`` until it is truthy; ScenarioFailed after ``timeout`` seconds.
        ``what`` may be a function, to describe the state at the moment of failing."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                said = what() if callable(what) else what
                raise ScenarioFailed(f"timed out after {timeout} s waiting for {said}")
            died = self.unexpected_exits()
            if died:
                said = what() if callable(what) else what
                raise ScenarioFailed(f"while waiting for {said}, workers exited: {died}")
            time.sleep(poll)

    def leader(self) -> tuple[str, int, float] | None:
        """(holder, term, acquired_at as epoch seconds) of an unexpired leader lease."""
        rows = self.sql(
            "SELECT holder, term, extract(epoch FROM acquired_at)::float8 FROM rota_leases"
            " WHERE name = 'leader' AND expires_at > now()"
            if self.is_postgres
            else "SELECT holder, term, acquired_at FROM rota_leases WHERE name = 'leader'"
        )
        if not rows:
            return None
        holder, term, acquired = rows[0]
        return str(holder), int(term), float(acquired) if self.is_postgres else 0.0

    def wait_registered(self, nodes: list[str], timeout: float = 30.0) -> None:
        """Until every one of ``nodes`` is an active worker in the registry."""

        def active() -> bool:
            rows = self.sql("SELECT node_id FROM rota_workers WHERE state = 'active'")
            return set(nodes) <= {row[0] for row in rows}

        self.wait(active, timeout, lambda: f"workers {nodes} to register")

    def diagnose(self) -> None:
        """Evidence for a failure: what the database's sessions are doing, and the runs
        still held or waiting (added to the notes)."""
        try:
            if self.is_postgres:
                name = self.db_url.rpartition("/")[2]
                activity = self.sql(
                    "SELECT pid, application_name, state, wait_event_type, wait_event,"
                    " round(extract(epoch FROM now() - xact_start)::numeric, 1) AS xact_s,"
                    " left(query, 80) FROM pg_stat_activity WHERE datname = %s"
                    " AND application_name <> %s ORDER BY xact_start NULLS LAST",
                    (name, APPLICATION_NAME),
                    retry_for=5,
                )
                self.notes.append(f"sessions at failure: {activity}")
                locks = self.sql(
                    "SELECT l.pid, l.mode, l.granted, c.relname FROM pg_locks l"
                    " LEFT JOIN pg_class c ON c.oid = l.relation WHERE l.database ="
                    " (SELECT oid FROM pg_database WHERE datname = %s) AND c.relname"
                    " NOT LIKE 'pg_%%'",
                    (name,),
                    retry_for=5,
                )
                self.notes.append(f"locks at failure: {locks}")
            held = self.sql(
                "SELECT id, state, worker_id, fence, attempt, lease_expires_at FROM rota_runs"
                " WHERE state NOT IN ('succeeded') ORDER BY id LIMIT 10",
                retry_for=5,
            )
            self.notes.append(f"unfinished runs at failure: {held}")
            self.notes.append(f"leader at failure: {self.leader()}")
        except Exception as exc:  # evidence is best effort; the failure is recorded anyway
            self.notes.append(f"could not collect evidence: {exc!r}")

    def state_counts(self) -> dict[str, int]:
        return dict(self.sql("SELECT state, count(*) FROM rota_runs GROUP BY state"))

    def wait_drained(self, expected: int, timeout: float, handler: str | None = None) -> float:
        """Wait until ``expected`` runs (of ``handler``, or of any) are terminal; returns
        the seconds it took."""
        started = time.monotonic()
        query = (
            "SELECT count(*) FROM rota_runs WHERE state IN"
            " ('succeeded', 'failed', 'timed_out', 'cancelled', 'dead_lettered')"
        )
        params: tuple[Any, ...] = ()
        if handler is not None:
            query, params = query + " AND handler = %s", (handler,)
        self.wait(
            lambda: self.scalar(query, params) >= expected,
            timeout,
            lambda: f"{expected} runs to finish (now: {self.state_counts()})",
            poll=0.2,
        )
        return time.monotonic() - started
