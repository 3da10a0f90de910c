"""Issue 14 item 3: webhook delivery rate, and what the outbox adds to completions.

Scenario ``webhooks`` of ``make bench``; alone: ``python -m bench.webhooks [--events N]``.

- delivery rate: N run.succeeded events in the outbox, drained by one deliverer (the
  one every node runs, batches of 20 sent at once) to a local receiver in another
  process (uvicorn, answering 204), on PostgreSQL and on SQLite;
- the completion path: N runs completed in batches of 100 with no subscription, and
  with one subscription that matches every run (one outbox row per completion).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg

from bench.config import BenchConfig
from bench.pg import ADMIN_URL, database_url
from bench.results import Results
from rota.bootstrap import open_store
from rota.clock import SystemClock
from rota.config import Settings
from rota.domain.access import ROLE_SCOPES, Principal, Role
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.webhooks import EventType, SubscriptionSpec
from rota.engine.webhook_delivery import Deliverer
from rota.services.webhooks import Webhooks
from rota.store.port import ClaimRequest, Store
from rota.store.sql_store import SqlStore

ADMIN = Principal("bench", "jwt", ROLE_SCOPES[Role.ADMIN], None)
BATCH = 100
RECEIVER = """
import sys, uvicorn

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def own_database(admin_url: str) -> Iterator[str]:
    """A database of this scenario's own: not named bench_*, which a concurrent full
    bench run drops as stale when it starts."""
    name = f"webhooks_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def receiver() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    url = f"http://127.0.0.1:{port}/hooks"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.post(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


async def complete_runs(store: Store, count: int) -> float:
    """Seconds to enqueue-claim-complete ``count`` runs in batches; only the completions
    are timed."""
    spent = 0.0
    for start in range(0, count, BATCH):
        size = min(BATCH, count - start)
        await store.enqueue([NewRun(handler="job", payload_json="{}") for _ in range(size)], None)
        claimed = await store.claim(ClaimRequest("bench", ("default",), size, 60.0), None)
        outcomes = [
            Outcome(c.run_id, c.fence, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED, "null")
            for c in claimed
        ]
        began = time.perf_counter()
        await store.complete(outcomes, None)
        spent += time.perf_counter() - began
    return spent


async def measure_on(url: str, target: str, events: int) -> dict[str, float]:
    settings = Settings(database_url=url, webhook_allow_private_addresses=True)
    store = await open_store(settings)
    assert isinstance(store, SqlStore)
    try:
        bare = await complete_runs(store, events)
        spec = SubscriptionSpec("default", target, (EventType.RUN_SUCCEEDED,))
        await Webhooks(store, settings, SystemClock()).create(ADMIN, spec)
        subscribed = await complete_runs(store, events)
        deliverer = Deliverer(store, settings, SystemClock())
        try:
            began = time.perf_counter()
            delivered = await deliverer.drain()
            seconds = time.perf_counter() - began
        finally:
            await deliverer.close()
        assert delivered == events, (delivered, events)
        return {
            "deliveries_per_second": events / seconds,
            "complete_us_per_run_bare": bare / events * 1e6,
            "complete_us_per_run_subscribed": subscribed / events * 1e6,
        }
    finally:
        await store.close()


EVENTS = 5_000  # a quarter of cfg.jobs by default


def webhooks(cfg: BenchConfig, results: Results) -> None:
    """(k): each store in turn (`make bench`, or ``python -m bench.webhooks`` alone)."""
    events = max(200, cfg.jobs // 4)
    with receiver() as target:
        for store in ("PostgreSQL", "SQLite"):

            def measure(store: str = store) -> dict[str, float]:
                if store == "PostgreSQL":
                    with own_database(cfg.admin_url) as url:
                        return asyncio.run(measure_on(url, target, events))
                with tempfile.TemporaryDirectory() as folder:
                    url = f"sqlite:///{Path(folder) / 'bench.db'}"
                    return asyncio.run(measure_on(url, target, events))

            variant = f"{events:,} events"
            numbers = results.attempt("webhooks", store, variant, measure)
            if numbers is not None:
                rate = numbers["deliveries_per_second"]
                results.add("webhooks", store, variant, rate, events=events, **numbers)


def webhook_lines(results: Results) -> list[str]:
    """Section (k) of docs/benchmarks.md."""
    records = [r for r in results.records if r["scenario"] == "webhooks"]
    if not records:
        return ["Not measured in this run."]
    lines = [
        f"{records[0]['events']:,} run.succeeded events drained by one deliverer (batches of"
        " 20 under a lease, sent at once) to a local receiver answering 204; completions in"
        " batches of 100 with no subscription and with one matching every run.",
        "",
        "| store | deliveries/s | complete µs/run, no subscription | with one matching |",
        "|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['system']} | {r['deliveries_per_second']:,.0f} "
            f"| {r['complete_us_per_run_bare']:.0f} | {r['complete_us_per_run_subscribed']:.0f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.webhooks")
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--admin-url", default=os.environ.get("ROTA_BENCH_ADMIN", ADMIN_URL))
    args = parser.parse_args(argv)
    results = Results(meta={})
    webhooks(BenchConfig(admin_url=args.admin_url, jobs=args.events * 4), results)
    for failure in results.failures:
        print(f"FAILED: {failure}")
    print("\n".join(webhook_lines(results)))


if __name__ == "__main__":
    main()
