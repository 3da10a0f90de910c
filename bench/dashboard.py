"""(i) Issues 12 and 24: the dashboard's pages on a big runs table, per store (10,000,000
runs on PostgreSQL, 1,000,000 on SQLite in `make bench`; ``--rows`` sets both).

    .venv/bin/python -m bench.dashboard [--rows N] [--requests N]

For each store (PostgreSQL, SQLite): the (h) scenario's loaded database and
``rota server --no-worker --no-leader`` (bench.api), a session made through the sign-in
form, then WARMUP uncounted and ``--requests`` counted sequential GETs of each page on
one keep-alive client. The time is the client's, on loopback: the server's render plus
the hop, with client, server and database on the same 2 CPUs. Prints a Markdown table
(docs/benchmarks.md, section (i)); ``make bench`` runs it as scenario ``dashboard``.
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
from bench.results import Results, run_async

WARMUP = 10
PAGES = (
    "/",
    "/runs",
    "/runs?state=dead_lettered",
    "/runs?queue=etl&state=pending",
    "/runs?q=upstream",
    "/runs/{run_id}",
    "/dlq",
    "/runs?owner=team-a",
    "/jobs",
    "/queues",
    "/charts",
    "/charts?range=7d&by=handler",
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
        api_load.load_postgres(url, cfg.rows_on("PostgreSQL"))
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


PAGE_REQUESTS = 100  # per page; a fifth of (h)'s, there are fifteen pages


def dashboard_on(cfg: BenchConfig, results: Results, store: str) -> None:
    system = f"rota server ({store})"
    variant = f"{cfg.rows_on(store):,} runs"
    requests = max(10, cfg.api_requests // 5)

    def measure() -> dict[str, Any]:
        started = time.monotonic()
        loaded = _postgres(cfg) if store == "PostgreSQL" else _loaded_store(cfg, store)
        with loaded as url:
            # What the leader's minute duty keeps counted (this server runs without one).
            run_async(rota_runner.count_finished(url), LOAD_TIMEOUT_S)
            load_s = time.monotonic() - started
            log = Path(tempfile.gettempdir()) / "rota-bench" / f"dashboard-{store}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            with rota_server(url, log) as (base, token):
                pages = measure_pages(base, token, requests)
            # The overview's two shared reads on their own (the pages reuse them).
            reads = run_async(rota_runner.time_cluster_counts(url, requests), LOAD_TIMEOUT_S)
            for name, samples in reads.items():
                pages[f"(read) {name}"] = _ms_summary(samples)
        return {"load_s": round(load_s, 1), "pages": pages}

    outcome = results.attempt("dashboard", system, variant, measure)
    if outcome is not None:
        worst_p99 = max(v["p99_ms"] for v in outcome["pages"].values())
        results.add("dashboard", system, variant, worst_p99, rows=cfg.rows_on(store), **outcome)


STORES = ("PostgreSQL", "SQLite")


def dashboard(cfg: BenchConfig, results: Results, stores: tuple[str, ...] = STORES) -> None:
    """(i): each store in turn (`make bench`, or ``python -m bench.dashboard`` alone)."""
    for store in stores:
        dashboard_on(cfg, results, store)


def dashboard_lines(results: Results) -> list[str]:
    """Section (i) of docs/benchmarks.md."""
    records = [r for r in results.records if r["scenario"] == "dashboard"]
    if not records:
        return ["(not measured in this run)"]
    lines = [
        "| store | runs in table | page | requests | p50 ms | p99 ms | max ms |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in records:
        for page, m in r["pages"].items():
            what = page if page.startswith("(read)") else f"GET {page}"
            lines.append(
                f"| {r['system']} | {r['rows']:,} | `{what}` | {m['requests']:,} "
                f"| {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['max_ms']:.2f} |"
            )
    load_times = ", ".join(f"{r['load_s']:g} s" for r in records)
    lines += [
        "",
        "Setup: the (h) table (loaded by direct SQL, one run every 50 ms back from now, so "
        f"72,000 finished in the last hour at 1,000,000 runs; load took {load_times}), "
        "`rota server --no-worker --no-leader` as its own process, a session made "
        f"through the sign-in form, {WARMUP} uncounted warm-up requests per page, then "
        "sequential GETs on one keep-alive client. Times are the client's on loopback "
        "(the server's render plus the hop); client, server and database share the 2 "
        "CPUs. The overview's cluster counts are one read shared by every request of the "
        "process (live counts at most every 0.5 s, the hour's finished counts every 5 s), "
        "and a page is served the last reading while the next is made behind it: only "
        "a page's first request waits for it. The `(read)` rows time "
        "those two reads alone, called on the store directly (finished counts: the "
        "last hour in 5-minute buckets, after the leader's per-minute count).",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=PAGE_REQUESTS)
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    args = parser.parse_args(argv)
    cfg = BenchConfig(
        api_rows=args.rows, api_rows_postgres=args.rows, api_requests=args.requests * 5
    )
    results = Results(meta={})
    dashboard(cfg, results, tuple(args.stores))
    for failure in results.failures:
        print(f"FAILED: {failure}")
    print("\n".join(dashboard_lines(results)))


if __name__ == "__main__":
    main()
