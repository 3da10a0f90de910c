"""PgQueuer through its documented API, at the settings its own benchmark tool uses.

asyncpg driver (one connection per QueueManager, as in PgQueuer's tools/benchmark.py),
uvloop, ``batch_size=100``, ``mode=drain`` for the drain; schema from ``Queries.install``
plus the autovacuum tuning PgQueuer ships (``pgq autovac``). Durability stays at its
default (``durable``: every table logged), which is what rota also does.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from importlib.metadata import version as _package_version

import asyncpg
from pgqueuer import QueueManager
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.queries import Queries
from pgqueuer.types import QueueExecutionMode

from bench.procs import Control

NAME = "PgQueuer"
LOOP = "uvloop"
BATCH_SIZE = 100
# Finished jobs move to pgqueuer_log, so "unfinished" is "any row left in the queue".
STORED_SQL = "SELECT count(*) FROM pgqueuer"
UNFINISHED_SQL = "SELECT count(*) FROM (SELECT 1 FROM pgqueuer LIMIT 1) AS s"
SUCCEEDED_SQL = "SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'"


def version() -> str:
    return _package_version("pgqueuer")


async def _queries(url: str) -> tuple[asyncpg.Connection, Queries]:
    conn = await asyncpg.connect(dsn=url)
    return conn, Queries(AsyncpgDriver(conn))


async def install(url: str) -> None:
    conn, queries = await _queries(url)
    try:
        await queries.install()
        await queries.optimize_autovacuum()
    finally:
        await conn.close()


def _payloads(start: int, count: int) -> list[bytes | None]:
    return [json.dumps({"i": i}).encode() for i in range(start, start + count)]


async def enqueue_batches(url: str, total: int, batch: int) -> float:
    """``Queries.enqueue`` with lists; returns the seconds the calls took."""
    conn, queries = await _queries(url)
    try:
        started = time.perf_counter()
        for offset in range(0, total, batch):
            size = min(batch, total - offset)
            await queries.enqueue(["noop"] * size, _payloads(offset, size), [0] * size)
        return time.perf_counter() - started
    finally:
        await conn.close()


async def prefill(url: str, total: int, batch: int = 5000) -> None:
    await enqueue_batches(url, total, batch)


async def drain_worker(control: Control, url: str, batch_size: int | None = BATCH_SIZE) -> None:
    """One QueueManager in drain mode: it stops by itself once the queue is empty.
    ``batch_size`` None: QueueManager.run's own default."""
    conn, queries = await _queries(url)
    qm = QueueManager(queries)

    @qm.entrypoint("noop")
    async def noop(job: Job) -> None:
        return None

    control.ready()
    await control.wait_go()
    cpu_start = time.process_time()
    try:
        if batch_size is None:
            await qm.run(mode=QueueExecutionMode.drain)
        else:
            await qm.run(batch_size=batch_size, mode=QueueExecutionMode.drain)
    finally:
        await conn.close()
    control.report({"cpu_s": time.process_time() - cpu_start})


async def latency_worker(control: Control, url: str) -> None:
    """Continuous mode, idle on LISTEN/NOTIFY; records start - enqueue per job."""
    import asyncio

    conn, queries = await _queries(url)
    qm = QueueManager(queries)
    delays: list[float] = []

    @qm.entrypoint("probe")
    async def probe(job: Job) -> None:
        delays.append(time.time() - json.loads(job.payload or b"{}")["t"])

    control.ready()
    await control.wait_go()

    async def stop_when_told() -> None:
        await control.wait_stop()
        qm.shutdown.set()

    watcher = asyncio.create_task(stop_when_told())
    try:
        await qm.run(batch_size=BATCH_SIZE, dequeue_timeout=timedelta(seconds=30))
    finally:
        watcher.cancel()
        await conn.close()
    control.report({"delays": delays})


class LatencyProducer:
    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: asyncpg.Connection | None = None
        self._queries: Queries | None = None

    async def open(self) -> None:
        self._conn, self._queries = await _queries(self.url)

    async def enqueue(self) -> None:
        assert self._queries is not None
        await self._queries.enqueue("probe", json.dumps({"t": time.time()}).encode())

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()


async def drain_worker_defaults(control: Control, url: str) -> None:
    """The same, at QueueManager.run's own defaults (batch_size 10), on asyncio's loop."""
    conn, queries = await _queries(url)
    qm = QueueManager(queries)

    @qm.entrypoint("noop")
    async def noop(job: Job) -> None:
        return None

    control.ready()
    await control.wait_go()
    cpu_start = time.process_time()
    try:
        await qm.run(mode=QueueExecutionMode.drain)
    finally:
        await conn.close()
    control.report({"cpu_s": time.process_time() - cpu_start})
