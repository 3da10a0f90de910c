"""Procrastinate through its documented API.

``PsycopgConnector`` (psycopg 3 async pool, sized to the worker's concurrency plus the
LISTEN connection), ``batch_defer_async`` to produce, ``run_worker_async`` to consume
with ``concurrency=10`` and LISTEN/NOTIFY on (its default); ``wait=False`` for the drain,
so each worker stops once it has caught up with the queue. Finished jobs are kept
(``delete_jobs="never"``, its default), as rota keeps them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from importlib.metadata import version as _package_version

import procrastinate

from bench.procs import Control

NAME = "Procrastinate"
LOOP = "asyncio"
CONCURRENCY = 10
STORED_SQL = "SELECT count(*) FROM procrastinate_jobs"
UNFINISHED_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM procrastinate_jobs"
    " WHERE status IN ('todo', 'doing') LIMIT 1) AS s"
)
SUCCEEDED_SQL = "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"


def version() -> str:
    return _package_version("procrastinate")


def make_app(url: str, concurrency: int = CONCURRENCY) -> procrastinate.App:
    connector = procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=concurrency + 2)
    app = procrastinate.App(connector=connector)

    @app.task(name="noop")
    async def noop(i: int) -> None:
        return None

    return app


async def install(url: str) -> None:
    app = make_app(url)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def enqueue_batches(url: str, total: int, batch: int) -> float:
    """``batch_defer_async`` with ``batch`` jobs per call; returns the seconds taken."""
    app = make_app(url)
    async with app.open_async():
        task = app.tasks["noop"]
        started = time.perf_counter()
        for offset in range(0, total, batch):
            size = min(batch, total - offset)
            await task.batch_defer_async(*({"i": i} for i in range(offset, offset + size)))
        return time.perf_counter() - started


async def prefill(url: str, total: int, batch: int = 5000) -> None:
    await enqueue_batches(url, total, batch)


async def drain_worker(control: Control, url: str) -> None:
    app = make_app(url)
    async with app.open_async():
        control.ready()
        await control.wait_go()
        cpu_start = time.process_time()
        await app.run_worker_async(
            concurrency=CONCURRENCY, wait=False, install_signal_handlers=False
        )
    control.report({"cpu_s": time.process_time() - cpu_start})


async def latency_worker(control: Control, url: str) -> None:
    """Waits on LISTEN/NOTIFY; records start - enqueue per job."""
    app = make_app(url)
    delays: list[float] = []

    @app.task(name="probe")
    async def probe(t: float) -> None:
        delays.append(time.time() - t)

    async with app.open_async():
        control.ready()
        await control.wait_go()
        worker = asyncio.create_task(
            app.run_worker_async(concurrency=CONCURRENCY, install_signal_handlers=False)
        )
        await control.wait_stop()
        # Cancelling run_worker_async is its documented graceful stop.
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
    control.report({"delays": delays})


class LatencyProducer:
    def __init__(self, url: str) -> None:
        self.app = make_app(url)

        @self.app.task(name="probe")
        async def probe(t: float) -> None:  # never runs here
            return None

        self._task = probe

    async def open(self) -> None:
        await self.app.open_async()

    async def enqueue(self) -> None:
        await self._task.defer_async(t=time.time())

    async def close(self) -> None:
        await self.app.close_async()
