"""Worker processes with a start line: spawn, wait until every one is ready, start the
clock, tell them to go, tell them to stop, collect what they report.

Workers import, connect and register handlers BEFORE they report ready, so start-up
cost is outside the measured window for every system alike. Every wait has a deadline;
a worker that does not stop in time is killed and the scenario reported as failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing as mp
import os
import queue
import time
import traceback
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

# spawn, not fork: the parent holds open connections and maybe an event loop, and a
# forked copy of either misbehaves in ways that would be measured as the system's.
MP = mp.get_context("spawn")
WorkerFn = Callable[..., Coroutine[Any, Any, Any]]


class ScenarioFailed(Exception):
    """A scenario missed a deadline or a worker crashed; the report says which."""


@dataclass
class Control:
    """The child's end: the start line, the stop signal and the way back."""

    index: int
    go: Any
    stop: Any
    reports: Any

    def ready(self) -> None:
        self.reports.put(("ready", self.index, os.getpid()))

    async def wait_go(self, timeout: float = 120.0) -> None:
        if not await asyncio.to_thread(self.go.wait, timeout):
            raise ScenarioFailed(f"worker {self.index} never got the start signal")

    async def wait_stop(self) -> None:
        # Polling an mp.Event every 20 ms costs nothing measurable and needs no thread
        # that could outlive the loop.
        while not self.stop.is_set():
            await asyncio.sleep(0.02)

    def report(self, data: dict[str, Any]) -> None:
        self.reports.put(("result", self.index, {**data, "warnings": dict(WARNINGS)}))


# rota's warnings in a worker process, counted by message instead of printed: a lease
# storm would print one line per run, and the count is what the report needs. One
# counter per process (each worker is its own process), filled by _tally_warning.
WARNINGS: Counter[str] = Counter()
TALLIED = frozenset({"warning", "error", "critical", "exception"})


def _tally_warning(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    import structlog

    if method in TALLIED:
        WARNINGS[f"{method}: {event.get('event')}"] += 1
    raise structlog.DropEvent


def quiet_logging() -> None:
    """rota's default level (info, as `rota worker` runs): what it filters out costs what
    it costs a user, and what it lets through is built as it would be and then dropped,
    not printed. Warnings and errors are counted and come back with the worker's
    report. (Printing is left out so that a lease storm's lines do not flood the bench's
    output; at info a drain of successes prints nothing per run, ADR 0026.)"""
    import structlog

    structlog.configure(
        processors=[_tally_warning],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        cache_logger_on_first_use=True,  # as rota's own logs.configure: no bind per call
    )
    logging.basicConfig(level=logging.WARNING)


def _child_main(fn: WorkerFn, control: Control, kwargs: dict[str, Any], loop: str) -> None:
    quiet_logging()
    try:
        if loop == "uvloop":
            import uvloop

            uvloop.run(fn(control, **kwargs))
        else:
            asyncio.run(fn(control, **kwargs))
    except BaseException:
        control.reports.put(("error", control.index, traceback.format_exc()))
        raise


@dataclass
class WorkerGroup:
    """N processes running ``fn(control, **kwargs)``; one kwargs dict per process."""

    fn: WorkerFn
    kwargs: list[dict[str, Any]]
    loop: str = "asyncio"
    pids: list[int] = field(default_factory=list)
    results: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._go = MP.Event()
        self._stop = MP.Event()
        self._reports: Any = MP.Queue()
        self._procs = [
            MP.Process(
                target=_child_main,
                args=(self.fn, Control(i, self._go, self._stop, self._reports), kw, self.loop),
                daemon=True,
            )
            for i, kw in enumerate(self.kwargs)
        ]

    def start(self, ready_timeout: float = 90.0) -> None:
        """Start every process and return once all have reported ready."""
        for proc in self._procs:
            proc.start()
        deadline = time.monotonic() + ready_timeout
        while len(self.pids) < len(self._procs):
            kind, index, data = self._next_report(deadline, "ready")
            if kind == "ready":
                self.pids.append(data)
            elif kind == "result":
                self.results[index] = data

    def go(self) -> float:
        """Release the start line; returns the wall-clock instant it happened."""
        started = time.time()
        self._go.set()
        return started

    def stop(self) -> None:
        self._stop.set()

    def collect(self, timeout: float = 60.0, expect_results: bool = True) -> dict[int, Any]:
        """Wait for every process to report (if it reports) and exit."""
        deadline = time.monotonic() + timeout
        if expect_results:
            while len(self.results) < len(self._procs):
                _, index, data = self._next_report(deadline, "results")
                self.results[index] = data
        for proc in self._procs:
            proc.join(max(0.1, deadline - time.monotonic()))
        stuck = [p.pid for p in self._procs if p.is_alive()]
        if stuck:
            raise ScenarioFailed(f"worker processes {stuck} did not exit in time")
        return self.results

    def kill(self) -> None:
        """Make sure nothing outlives the scenario (used on every exit path)."""
        self._stop.set()
        started = [p for p in self._procs if p.pid is not None]
        for proc in started:
            if proc.is_alive():
                proc.terminate()
        for proc in started:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)

    def alive(self) -> bool:
        return any(p.pid is not None and p.is_alive() for p in self._procs)

    def check_errors(self) -> None:
        """Raise at once if a worker has already crashed, without waiting."""
        with contextlib.suppress(queue.Empty):
            while True:
                kind, index, data = self._reports.get_nowait()
                if kind == "error":
                    raise ScenarioFailed(f"worker {index} crashed:\n{data}")
                if kind == "result":
                    self.results[index] = data

    def _next_report(self, deadline: float, waiting_for: str) -> tuple[str, int, Any]:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ScenarioFailed(f"timed out waiting for worker {waiting_for}")
            try:
                kind, index, data = self._reports.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if not self.alive() and self._reports.empty():
                    raise ScenarioFailed(f"workers exited before reporting {waiting_for}") from None
                continue
            if kind == "error":
                raise ScenarioFailed(f"worker {index} crashed:\n{data}")
            return kind, index, data

    def __enter__(self) -> WorkerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
