"""rota through its public API: ``App.enqueue_many`` to produce, ``App.work`` to consume.

The same functions serve PostgreSQL and SQLite; only the URL differs. Worker functions
run inside a spawned process (see bench.procs) and report their own CPU time.
"""

from __future__ import annotations

import asyncio
import cProfile
import sqlite3
import time
from datetime import timedelta
from importlib.metadata import version as _package_version
from typing import Any

import rota
from bench.procs import Control

NAME = "rota"
# Runs neither finished nor failed: the drain is over when none is left. Asked every
# 20 ms while the drain runs, so it must stay an index probe: waiting runs and held runs
# are in different indexes (the state index leaves held runs out, ADR 0025), and one
# test of all four states became a sequential scan past every finished run.
STORED_SQL = "SELECT count(*) FROM rota_runs"
# CAST, not ``::int``: the SQLite drain asks it too.
UNFINISHED_SQL = (
    "SELECT CAST(EXISTS (SELECT 1 FROM rota_runs WHERE state IN ('pending', 'retrying'))"
    " OR EXISTS (SELECT 1 FROM rota_runs WHERE state IN ('claimed', 'running')) AS integer)"
)
SUCCEEDED_SQL = "SELECT count(*) FROM rota_runs WHERE state = 'succeeded'"
# Executions: more than runs would mean a run ran twice. A run's succeeded attempt may
# be kept in the run's own row, not as an attempt row (ADR 0038): the attempts that did
# not succeed, plus the runs that did. Not the view rota_run_attempts: bench.ab also
# measures revisions from before it.
ATTEMPTS_SQL = (
    "SELECT (SELECT count(*) FROM rota_attempts WHERE outcome <> 'succeeded')"
    " + (SELECT count(*) FROM rota_runs WHERE state = 'succeeded')"
)


def version() -> str:
    return _package_version("rota")


def settings(url: str, pool_size: int | None = 4) -> rota.Settings:
    # Defaults except the pool, which the concurrency sweep may raise (None: the default).
    if pool_size is None:
        return rota.Settings(database_url=url)
    return rota.Settings(database_url=url, pool_size=pool_size)


def make_app(url: str, pool_size: int | None = 4) -> rota.App:
    app = rota.App(url, settings=settings(url, pool_size))

    @app.handler("noop")
    async def noop(ctx: rota.RunContext, payload: Any) -> None:
        return None

    return app


def noop_jobs(count: int) -> list[dict[str, Any]]:
    return [{"handler": "noop", "payload": {"i": i}} for i in range(count)]


async def install(url: str) -> None:
    """Create the schema (rota migrates on first use)."""
    app = make_app(url)
    try:
        await app.store()
    finally:
        await app.aclose()


async def enqueue_batches(url: str, total: int, batch: int) -> float:
    """Enqueue ``total`` runs in calls of ``batch``; returns the seconds the calls took.
    Building the job dicts is inside the window: it is part of what a caller does."""
    app = make_app(url)
    try:
        await app.store()  # connect and migrate outside the window
        started = time.perf_counter()
        for offset in range(0, total, batch):
            await app.enqueue_many_async(noop_jobs(min(batch, total - offset)))
        return time.perf_counter() - started
    finally:
        await app.aclose()


async def prefill(url: str, total: int, batch: int = 5000) -> None:
    await enqueue_batches(url, total, batch)


async def drain_worker(
    control: Control,
    url: str,
    concurrency: int | None,
    node_id: str,
    pool_size: int | None = 4,
    profile_path: str | None = None,
    metrics: bool = True,
) -> None:
    """Work until the parent says stop; report CPU seconds used after the start line.
    ``metrics``: rota's Prometheus instruments on or off (bench.observability).
    ``concurrency`` and ``pool_size`` None: rota's own defaults, as `rota worker` ships."""
    try:
        from rota.observe import hooks
    except ModuleNotFoundError:  # a revision older than the metrics (bench.ab --before)
        pass
    else:
        hooks.set_enabled(metrics)
    app = make_app(url, pool_size)
    await app.store()
    options = (
        app.worker_options(node_id=node_id)
        if concurrency is None
        else app.worker_options(concurrency=concurrency, node_id=node_id)
    )
    control.ready()
    await control.wait_go()
    cpu_start = time.process_time()
    # CPU time, not wall time: on 2 busy cores a process is often descheduled inside a
    # send() that woke the server, and wall-clock profiling would blame that call.
    profiler = cProfile.Profile(time.process_time) if profile_path else None
    stop = asyncio.Event()
    watcher = asyncio.create_task(_set_when_stopped(control, stop))
    try:
        if profiler is not None:
            profiler.enable()
        worker = await app.work(stop, options)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile_path)
        watcher.cancel()
        await app.aclose()
    control.report(
        {
            "cpu_s": time.process_time() - cpu_start,
            "claimed": worker.claimed_total,
            "claims": claims_counted() if metrics else None,
        }
    )


def claims_counted() -> int | None:
    """Claims that returned runs in this process so far, from rota's own histogram of
    runs per claim (its count; kept only while metrics are on). An empty claim is not
    in it: a drain makes a few, when the queue runs dry. None where it is missing."""
    try:
        from rota.observe.hooks import OBSERVER
    except ModuleNotFoundError:  # a revision older than the metrics (bench.ab --before)
        return None
    count = OBSERVER.registry.get_sample_value("rota_claim_batch_runs_count")
    return None if count is None else int(count)


async def _set_when_stopped(control: Control, stop: asyncio.Event) -> None:
    await control.wait_stop()
    stop.set()


async def latency_worker(control: Control, url: str, concurrency: int = 10) -> None:
    """Record start - enqueue for each run; payload ``t`` is the producer's time.time()."""
    app = rota.App(url, settings=settings(url))
    delays: list[float] = []

    @app.handler("probe")
    async def probe(ctx: rota.RunContext, payload: dict[str, float]) -> None:
        delays.append(time.time() - payload["t"])

    await app.store()
    stop = asyncio.Event()
    control.ready()
    await control.wait_go()
    watcher = asyncio.create_task(_set_when_stopped(control, stop))
    try:
        await app.work(stop, app.worker_options(concurrency=concurrency, node_id="latency"))
    finally:
        watcher.cancel()
        await app.aclose()
    control.report({"delays": delays})


class LatencyProducer:
    """Enqueues one probe run at a time, as an application would."""

    def __init__(self, url: str) -> None:
        self.app = rota.App(url, settings=settings(url))

        @self.app.handler("probe")
        async def probe(ctx: rota.RunContext, payload: Any) -> None:  # never runs here
            return None

    async def open(self) -> None:
        await self.app.store()

    async def enqueue(self) -> None:
        await self.app.enqueue_async("probe", {"t": time.time()})

    async def close(self) -> None:
        await self.app.aclose()


class SqliteProbe:
    """The same cheap questions as bench.pg.Probe, asked of a SQLite file, read-only."""

    def __init__(self, url: str) -> None:
        path = url.removeprefix("sqlite:///")
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)

    def scalar(self, sql: str) -> int:
        row = self._conn.execute(sql).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def backend_pids(self) -> list[int]:
        return []  # no server: the workers' own CPU is all there is

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqliteProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def keyed_jobs(count: int, keys: int, key_limit: int) -> list[dict[str, Any]]:
    """No-op runs spread round-robin over ``keys`` concurrency keys, each capped."""
    return [
        {
            "handler": "noop",
            "payload": {"i": i},
            "concurrency_key": f"k{i % keys}",
            "key_limit": key_limit,
        }
        for i in range(count)
    ]


async def prefill_keyed(url: str, total: int, keys: int, key_limit: int, batch: int = 5000) -> None:
    app = make_app(url)
    try:
        await app.store()
        for offset in range(0, total, batch):
            await app.enqueue_many_async(keyed_jobs(min(batch, total - offset), keys, key_limit))
    finally:
        await app.aclose()


def slot_runs(offset: int, count: int, slot: Any) -> list[Any]:
    """No-op runs as a cron slot's: each of its own job (job_id) for one slot (slot_at),
    due at the slot (what the planner writes for ``* * * * *`` jobs, bench (g))."""
    from rota.domain.runs import NewRun

    return [
        NewRun(handler="noop", payload_json="null", run_at=slot, job_id=i + 1, slot_at=slot)
        for i in range(offset, offset + count)
    ]


async def prefill_slot(url: str, total: int, batch: int = 5000) -> None:
    """``total`` slot runs of one slot already passed, so all are due at the start line."""
    app = make_app(url)
    try:
        store = await app.store()
        slot = (await store.now(None)).replace(microsecond=0)
        for offset in range(0, total, batch):
            await store.enqueue(slot_runs(offset, min(batch, total - offset), slot), None)
    finally:
        await app.aclose()


async def count_finished(url: str) -> None:
    """The leader's per-minute counts of finished runs (the charts' rollup, which the
    overview reads too), caught up once (a leader does it every minute; the dashboard
    bench's server runs without one)."""
    app = make_app(url)
    try:
        store = await app.store()
        now = await store.now(None)
        while not (await store.count_chart_batch(now)).caught_up:
            pass
    finally:
        await app.aclose()


async def time_cluster_counts(url: str, requests: int) -> dict[str, list[float]]:
    """Milliseconds of each of the overview's two shared reads, called directly."""
    app = make_app(url)
    try:
        store = await app.store()
        samples: dict[str, list[float]] = {"live_queue_counts": [], "finished_counts": []}
        for _ in range(requests):
            started = time.perf_counter()
            await store.live_queue_counts(None)
            samples["live_queue_counts"].append((time.perf_counter() - started) * 1000)
            since = await store.now(None) - timedelta(hours=1)
            started = time.perf_counter()
            await store.finished_counts(since, 300)
            samples["finished_counts"].append((time.perf_counter() - started) * 1000)
        return samples
    finally:
        await app.aclose()
