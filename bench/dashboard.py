"""(i) Issue 12: the dashboard's pages on a 1,000,000-run table, per store.

    .venv/bin/python -m bench.dashboard [--rows N] [--requests N]

For each store (PostgreSQL, SQLite): the (h) scenario's loaded database and
``rota server --no-worker --no-leader`` (bench.api), a session made through the sign-in
form, then WARMUP uncounted and ``--requests`` counted sequential GETs of each page on
one keep-alive client. The time is the client's, on loopback: the server's render plus
the hop, with client, server and database on the same 2 CPUs. Prints a Markdown table
(docs/benchmarks.md, section (i)).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench import api_load, pg, rota_runner
from bench.api import LOAD_TIMEOUT_S, _loaded_store, _ms_summary, rota_server
from bench.config import BenchConfig
from bench.procs import ScenarioFailed
from bench.results import run_async

WARMUP = 10
PAGES = (
    "/",
    "/runs",
    "/runs?state=dead_lettered",
    "/runs?queue=etl&state=pending",
    "/runs?q=upstream",
    "/runs/{run_id}",
    "/dlq",
    "/jobs",
    "/workers",
    "/leader",
)


@contextlib.contextmanager
def _postgres(cfg: BenchConfig) -> Iterator[str]:
    """Like (h)'s database, under a name a concurrent `make bench` does not sweep away
    (its start-up drops every leftover bench_* database)."""
    name = f"dashbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cfg.admin_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg.database_url(cfg.admin_url, name)
    try:
        run_async(rota_runner.install(url), LOAD_TIMEOUT_S)
        api_load.load_postgres(url, cfg.api_rows)
        yield url
    finally:
        with psycopg.connect(cfg.admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _session(base: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30)
    form = client.get("/signin")
    found = re.search(r'name="signin_token" value="([^"]+)"', form.text)
    if found is None:
        raise ScenarioFailed(f"no sign-in form: {form.status_code}")
    answer = client.post(
        "/signin", data={"credential": token, "signin_token": found.group(1), "next": "/"}
    )
    if answer.status_code != 303:
        raise ScenarioFailed(f"sign-in: {answer.status_code} {answer.text[:300]}")
    return client


def measure_pages(base: str, token: str, requests: int) -> dict[str, Any]:
    api = httpx.get(
        f"{base}/api/v1/runs",
        params={"state": "dead_lettered", "limit": 1},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    run_id = api.json()["items"][0]["id"]
    out: dict[str, Any] = {}
    client = _session(base, token)
    try:
        for template in PAGES:
            path = template.format(run_id=run_id)
            samples = []
            for i in range(WARMUP + requests):
                started = time.perf_counter()
                answer = client.get(path)
                elapsed = (time.perf_counter() - started) * 1000
                if answer.status_code != 200:
                    raise ScenarioFailed(f"GET {path}: {answer.status_code} {answer.text[:300]}")
                if i >= WARMUP:
                    samples.append(elapsed)
            out[template] = _ms_summary(samples)
    finally:
        client.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    cfg = BenchConfig(api_rows=args.rows)
    lines = [
        "| store | runs in table | page | requests | p50 ms | p99 ms | max ms |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for store in ("PostgreSQL", "SQLite"):
        started = time.monotonic()
        loaded = _postgres(cfg) if store == "PostgreSQL" else _loaded_store(cfg, store)
        with loaded as url:
            print(f"{store}: loaded {args.rows:,} runs in {time.monotonic() - started:.1f} s")
            log = Path(tempfile.gettempdir()) / "rota-bench" / f"dashboard-{store}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            with rota_server(url, log) as (base, token):
                pages = measure_pages(base, token, args.requests)
        for page, summary in pages.items():
            lines.append(
                f"| rota server ({store}) | {args.rows:,} | `GET {page}` | "
                f"{summary['requests']} | {summary['p50_ms']:.2f} | {summary['p99_ms']:.2f} | "
                f"{summary['max_ms']:.2f} |"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
