"""Issue 13 items 5 and 7: what a publish costs against a plain enqueue, and how fast a
backfill makes its runs.

Alone: ``python -m bench.events [--n N]``. On SQLite (a temp file) and PostgreSQL (a
fresh database), one after the other, sequentially (one caller):

- enqueue: N single-run enqueues (the baseline);
- publish: N publishes of distinct events to a name one job subscribes to (the event
  row, the subscription read and the run, in one transaction);
- publish again: the same N events published a second time (found, nothing made);
- backfill: a job's 1,000 minutely slots, in chunks of 200 as the CLI sends them.

Medians per call come from the same run, so the ratios hold on a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import psycopg

from rota.bootstrap import open_store
from rota.clock import SystemClock
from rota.config import Settings
from rota.domain.backfill import BackfillRequest
from rota.domain.events import NewEvent
from rota.domain.jobs import JobSpec, TriggerKind
from rota.domain.runs import NewRun
from rota.services import backfill
from rota.store.event_port import EventStore
from rota.store.port import Store

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextlib.contextmanager
def pg_database() -> Iterator[str]:
    name = f"events_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def timed(calls: int, call: Callable[[int], Awaitable[object]]) -> float:
    """The median seconds of ``call(i)`` for i in range(calls)."""
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def measure(url: str, calls: int) -> dict[str, float]:
    store: Store = await open_store(Settings(database_url=url))
    events = cast(EventStore, store)
    try:
        spec = JobSpec(name="receipts", handler="send-receipt")
        job = await store.save_job(spec, datetime.now(UTC), None, None)
        await events.subscribe_job(job, "order.created", {"region": "eu"}, None)
        payload = json.dumps({"region": "eu", "total": 5})

        def event(i: int) -> NewEvent:
            return NewEvent("order.created", f"order-{i}", payload)

        run = NewRun(handler="send-receipt", payload_json=payload)
        enqueue = await timed(calls, lambda i: store.enqueue([run], None))
        publish = await timed(calls, lambda i: events.publish(event(i), None))
        again = await timed(calls, lambda i: events.publish(event(i), None))
        minutely = JobSpec(name="minutely", handler="send-receipt", kind=TriggerKind.CRON,
                           cron="* * * * *")  # fmt: skip
        await store.save_job(minutely, datetime.now(UTC), None, None)
        start_at = datetime(2026, 1, 1, tzinfo=UTC)
        began = time.perf_counter()
        next_from: datetime | None = start_at
        while next_from is not None:
            asked = BackfillRequest(next_from, start_at + timedelta(minutes=1000), limit=200)
            done = await backfill.backfill(store, SystemClock(), "default", "minutely", asked)
            next_from = done.next_from
        backfill_seconds = time.perf_counter() - began
    finally:
        await store.close()
    return {
        "enqueue_ms": enqueue * 1000,
        "publish_ms": publish * 1000,
        "publish_again_ms": again * 1000,
        "publish_over_enqueue": publish / enqueue,
        "backfill_1000_slots_s": backfill_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    n = parser.parse_args().n
    with tempfile.TemporaryDirectory() as folder:
        sqlite = asyncio.run(measure(f"sqlite:///{Path(folder) / 'bench.db'}", n))
    with pg_database() as url:
        postgres = asyncio.run(measure(url, n))
    for name, numbers in (("sqlite", sqlite), ("postgres", postgres)):
        shown = ", ".join(f"{key}={value:.3f}" for key, value in numbers.items())
        print(f"{name}: {shown}")


if __name__ == "__main__":
    main()
