"""(r) Issue 24: dropping a day of history (cfg.retire_runs runs, with their attempts and
log lines) takes under 1 s and does not slow a drain running beside it.

Each measurement gets a fresh database with one day of history (bench.history_day:
yesterday, ``cfg.retire_runs`` succeeded runs, an attempt and two log lines each, then
VACUUM ANALYZE) and ``cfg.retire_drain_jobs`` pending no-op runs: more than the other
drains' ``cfg.jobs``, so that the drain outlasts the drop (20,000 runs drain in about a
second). The 2 worker processes of (b) drain them; ``cfg.retire_after_s`` after the
start line, a connection of its own calls ``rota_retire_history(<end of that day>)``
and the call is timed (wall clock, and its backend's CPU). The same drain without the
drop is measured in every repeat too (which goes first alternates), over the same
loaded history.

The drain's progress is read from outside: every SAMPLE_EVERY-th poll counts the
unfinished runs. Both questions go to the queue partition (rota_runs_live) by name: a
question about rota_runs plans over history too and could wait behind the drop's lock,
and its sample would then say when the lock went, not how far the drain was.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import psycopg

from bench import pg, rota_runner
from bench.config import BenchConfig
from bench.cpu import _cpu_seconds
from bench.history_day import HistoryDay, load_history_day
from bench.procs import ScenarioFailed, WorkerGroup
from bench.progress import Progress, drop_windows
from bench.results import Results, run_async
from bench.systems import RotaWorkerSettings, System, rota_system

SCENARIO = "retire"
PROCESSES = 2
DROPPED = f"{PROCESSES} processes, a day of history dropped"
PLAIN = f"{PROCESSES} processes, no drop"
SETUP_TIMEOUT_S = 180.0
POLL_S = 0.02  # as bench.drain: the end is seen within 1% of a 2 s drain
# Polls: a count every 0.1 s. A count costs more than the probe (~7 ms of server time
# at 100,000 unfinished runs, less as they go: a few % of one core, alike for both drains).
SAMPLE_EVERY = 5
LIVE_LEFT_SQL = (
    "SELECT CAST(EXISTS (SELECT 1 FROM rota_runs_live WHERE state IN ('pending', 'retrying'))"
    " OR EXISTS (SELECT 1 FROM rota_runs_live WHERE state IN ('claimed', 'running'))"
    " AS integer)"
)
LIVE_UNFINISHED_SQL = (
    "SELECT (SELECT count(*) FROM rota_runs_live WHERE state IN ('pending', 'retrying'))"
    " + (SELECT count(*) FROM rota_runs_live WHERE state IN ('claimed', 'running'))"
)
DRAIN_SUCCEEDED_SQL = "SELECT count(*) FROM rota_runs WHERE id > %s AND state = 'succeeded'"
DRAIN_ATTEMPTS_SQL = "SELECT count(*) FROM rota_run_attempts WHERE run_id > %s"
# What the drop left of the day (ids 1..N), and the dead rows it left behind. The dead
# rows are summed over a table's partitions, if it has any, without naming them.
LEFT_SQL = {
    "runs_left": "SELECT count(*) FROM rota_runs WHERE id <= %s",
    "attempts_left": "SELECT count(*) FROM rota_run_attempts WHERE run_id <= %s",
    "logs_left": "SELECT count(*) FROM rota_run_logs WHERE run_id <= %s",
}
DEAD_ROWS_SQL = (
    "SELECT COALESCE(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relid = %s::regclass"
    " OR relid IN (SELECT relid FROM pg_partition_tree(%s::regclass))"
)


@dataclass
class DayDrop:
    """The drop, on a connection of its own, in a thread: ``at_s`` after the start line
    it calls rota_retire_history and records when, for how long, and what it returned."""

    url: str
    older_than: datetime
    at_s: float
    start_s: float | None = None
    seconds: float | None = None
    cpu_s: float | None = None
    rows: int | None = None
    error: Exception | None = None
    _abort: threading.Event = field(default_factory=threading.Event)
    _conn: psycopg.Connection[Any] | None = None
    _pid: int = 0

    @contextlib.contextmanager
    def opened(self) -> Iterator[DayDrop]:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            self._conn, self._pid = conn, int(row[0]) if row else 0
            try:
                yield self
            finally:
                self._abort.set()

    def start(self, start_line: float) -> threading.Thread:
        if self._conn is None:
            raise RuntimeError("DayDrop.start() outside DayDrop.opened()")
        thread = threading.Thread(
            target=self._run, args=(self._conn, start_line), name="day-drop", daemon=True
        )
        thread.start()
        return thread

    def _run(self, conn: psycopg.Connection[Any], start_line: float) -> None:
        if self._abort.wait(max(0.0, start_line + self.at_s - time.monotonic())):
            return  # the drain failed before the drop was due
        try:
            cpu_before = _cpu_seconds(self._pid)
            started = time.monotonic()
            row = conn.execute("SELECT rota_retire_history(%s)", (self.older_than,)).fetchone()
            self.seconds = time.monotonic() - started
            self.start_s = started - start_line
            self.cpu_s = _cpu_seconds(self._pid) - cpu_before
            self.rows = int(row[0]) if row else None
            # The dead rows it left reach pg_stat_user_tables when this statement ends,
            # not up to a second later (a backend's statistics are flushed at most once
            # a second unless forced).
            conn.execute("SELECT pg_stat_force_next_flush()")
        except Exception as exc:  # kept, and raised in the bench's own thread
            self.error = exc


@dataclass(frozen=True)
class Drained:
    progress: Progress
    workers_cpu_s: float
    warnings: dict[str, int]


def _drain(system: System, url: str, jobs: int, drop: DayDrop | None, timeout_s: float) -> Drained:
    """Drain ``jobs`` runs with the drop (if any) beside it; progress every 0.1 s."""
    kwargs = [system.worker_kwargs(url, i) for i in range(PROCESSES)]
    with (
        WorkerGroup(rota_runner.drain_worker, kwargs, system.loop) as group,
        pg.Probe(url) as probe,
        drop.opened() if drop else contextlib.nullcontext(),
    ):
        group.start()
        group.go()
        start_line = time.monotonic()
        thread = drop.start(start_line) if drop else None
        progress = _watch(probe, group, jobs, start_line, timeout_s)
        group.stop()
        reports = list(group.collect(timeout=60).values())
        if thread is not None:
            thread.join(timeout_s)
    if drop is not None and drop.error is not None:
        raise ScenarioFailed(f"the drop failed: {drop.error!r}")
    if drop is not None and drop.rows is None:
        raise ScenarioFailed(f"the drop did not end within {timeout_s:.0f} s")
    warnings: dict[str, int] = {}
    for report in reports:
        for message, count in report.get("warnings", {}).items():
            warnings[message] = warnings.get(message, 0) + count
    return Drained(progress, sum(float(r.get("cpu_s", 0.0)) for r in reports), warnings)


def _watch(
    probe: pg.Probe, group: WorkerGroup, jobs: int, start_line: float, timeout_s: float
) -> Progress:
    """Poll until no run is unfinished, counting them every SAMPLE_EVERY-th poll."""
    samples: list[tuple[float, int]] = []
    polls = 0
    while probe.scalar(LIVE_LEFT_SQL) > 0:
        group.check_errors()
        polls += 1
        if polls % SAMPLE_EVERY == 0:
            # The instant the count's snapshot was taken: before it is asked.
            at = time.monotonic() - start_line
            samples.append((at, jobs - probe.scalar(LIVE_UNFINISHED_SQL)))
        if time.monotonic() - start_line > timeout_s:
            raise ScenarioFailed(f"drain not finished after {timeout_s:.0f} s")
        time.sleep(POLL_S)
    return Progress.of(samples, jobs, time.monotonic() - start_line)


def _checked(url: str, jobs: int, day: HistoryDay, drop: DayDrop | None) -> dict[str, Any]:
    """Every drained run succeeded once; the drop retired the day, and what it left."""
    with pg.Probe(url) as probe:
        succeeded = probe.scalar(DRAIN_SUCCEEDED_SQL, (day.runs,))
        attempts = probe.scalar(DRAIN_ATTEMPTS_SQL, (day.runs,))
        if succeeded != jobs or attempts != jobs:
            raise RuntimeError(f"{succeeded} succeeded runs, {attempts} attempts of {jobs} runs")
        if drop is None:
            return {}
        if drop.rows != day.runs:
            raise RuntimeError(f"the drop retired {drop.rows} runs; the day held {day.runs}")
        left = {key: probe.scalar(sql, (day.runs,)) for key, sql in LEFT_SQL.items()}
        dead = {
            f"{table}_dead_rows": probe.scalar(DEAD_ROWS_SQL, (table, table))
            for table in ("rota_attempts", "rota_run_logs")
        }
    return {**left, **dead}


def _drop_record(cfg: BenchConfig, drop: DayDrop, end_s: float) -> dict[str, Any]:
    start, seconds = drop.start_s or 0.0, drop.seconds or 0.0
    windows = drop_windows(cfg.retire_after_s, start, seconds, end_s)
    return {
        "drop_s": round(seconds, 4),
        "drop_start_s": round(start, 3),
        "drop_server_cpu_s": round(drop.cpu_s or 0.0, 3),
        "drop_rows": drop.rows,
        "drain_outlasted_drop": start + seconds < end_s,
        "windows": {name: [round(a, 3), round(b, 3)] for name, (a, b) in windows.items()},
    }


def retire_once(cfg: BenchConfig, worker: RotaWorkerSettings, dropped: bool) -> dict[str, Any]:
    system = rota_system(worker)
    jobs = cfg.retire_drain_jobs
    with pg.fresh_database(cfg.admin_url, "retire") as url:
        run_async(rota_runner.install(url), SETUP_TIMEOUT_S)
        day = load_history_day(url, cfg.retire_runs)
        run_async(rota_runner.prefill(url, jobs), SETUP_TIMEOUT_S)
        with pg.Probe(url) as probe:
            # The load's WAL (~1 GB for a million runs) would start a checkpoint that
            # runs beside whichever drain comes next; it is written out here instead.
            probe.execute("CHECKPOINT")
        drop = DayDrop(url, day.ends, cfg.retire_after_s) if dropped else None
        drained = _drain(system, url, jobs, drop, cfg.scenario_timeout_s)
        checks = _checked(url, jobs, day, drop)
    end_s = drained.progress.end_s
    return {
        "jobs": jobs,
        "seconds": round(end_s, 4),
        "jobs_per_s": round(jobs / end_s, 1),
        "workers_cpu_s": round(drained.workers_cpu_s, 3),
        "warnings": drained.warnings,
        "day": day.day.isoformat(),
        "day_runs": day.runs,
        "load_s": day.load_s,
        **(_drop_record(cfg, drop, end_s) if drop else {}),
        **checks,
        "series": [[round(t, 3), done] for t, done in drained.progress.samples],
    }


def retire_day(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings, repeat: int) -> None:
    """One repeat: the drain with the drop and without it, the first one alternating."""
    for variant in (DROPPED, PLAIN) if repeat % 2 == 0 else (PLAIN, DROPPED):
        measure = partial(retire_once, cfg, worker, variant == DROPPED)
        stats = results.attempt(SCENARIO, "rota", variant, measure)
        if stats is not None:
            value = stats["jobs_per_s"]
            results.add(SCENARIO, "rota", variant, value, unit="jobs/s", repeat=repeat, **stats)
