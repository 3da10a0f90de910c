"""The overview's two shared reads before and after issue 12's store changes, timed in
the same run on a 1,000,000-run table (docs/benchmarks.md, section (j)).

    .venv/bin/python -m bench.dashboard_reads SQLITE_URL POSTGRES_URL [--requests N]

Both databases must hold the (h) table (bench.api_load) and be migrated. Per store and
read, ``--requests`` calls of each variant, interleaved (old, new, old, ...), so a busy
machine slows both alike:

- live counts, before: the state index without the covered columns (SQLite: a
  narrow copy of the old index, chosen with INDEXED BY; PostgreSQL: index-only scans
  off, so each row is read from the heap as the old index made it); after: the store.
- finished counts of the hour in 5-minute buckets, before: the runs grouped (the
  store's query without the minute counts); after: the store (the leader's minute
  counts, made once here, plus the runs since).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import time
from datetime import timedelta
from typing import Any

import psycopg

import rota
from bench.api import _ms_summary

LIVE = """SELECT namespace, queue, state, count(*) AS count,
       min(CASE WHEN state IN ('pending', 'retrying') AND run_at <= {now} THEN run_at END)
FROM rota_runs {hint}
WHERE state IN ('pending', 'claimed', 'running', 'retrying', 'dead_lettered')
GROUP BY namespace, queue, state"""
FINISHED_SQLITE = """SELECT CAST(finished_at / 300 AS INTEGER) * 300, namespace, queue, state,
       count(*) FROM rota_runs WHERE finished_at IS NOT NULL AND finished_at >= ?
GROUP BY 1, namespace, queue, state"""
FINISHED_PG = """SELECT to_timestamp(floor(extract(epoch FROM finished_at) / 300) * 300),
       namespace, queue, state, count(*) FROM rota_runs
WHERE finished_at IS NOT NULL AND finished_at >= %s GROUP BY 1, namespace, queue, state"""


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


async def measure(url: str, requests: int) -> dict[str, Any]:
    app = rota.App(settings=rota.Settings(database_url=url))
    store = await app.store()
    now = await store.now(None)
    while not (await store.count_chart_batch(now)).caught_up:
        pass
    sqlite = url.startswith("sqlite")
    if sqlite:
        # Since SQLite migration 19 rota_runs is a view of two tables (ADR 0027): the old
        # index cannot be made on it, so the "before" read no longer exists there.
        raise SystemExit(
            "bench.dashboard_reads: the SQLite 'before' read needs the one-table"
            " schema of SQLite migrations 1-18; measure on such a database"
        )
        raw: Any = sqlite3.connect(url.removeprefix("sqlite:///"))
        raw.execute("CREATE INDEX IF NOT EXISTS bench_old_state_id ON rota_runs (state, id)")
    else:
        raw = psycopg.connect(url, autocommit=True)
    samples: dict[str, list[float]] = {
        k: [] for k in ("live before", "live after", "finished before", "finished after")
    }
    try:
        for _ in range(requests):
            now = time.time()
            started = time.perf_counter()
            if sqlite:
                hint = "INDEXED BY bench_old_state_id"
                raw.execute(LIVE.format(now=now, hint=hint)).fetchall()
            else:
                raw.execute("SET enable_indexonlyscan = off")
                raw.execute(LIVE.format(now="now()", hint="")).fetchall()
                raw.execute("RESET enable_indexonlyscan")
            samples["live before"].append(_ms(started))
            started = time.perf_counter()
            await store.live_queue_counts(None)
            samples["live after"].append(_ms(started))
            since = await store.now(None) - timedelta(hours=1)
            started = time.perf_counter()
            if sqlite:
                raw.execute(FINISHED_SQLITE, (since.timestamp(),)).fetchall()
            else:
                raw.execute(FINISHED_PG, (since,)).fetchall()
            samples["finished before"].append(_ms(started))
            started = time.perf_counter()
            await store.finished_counts(since, 300)
            samples["finished after"].append(_ms(started))
    finally:
        if sqlite:
            raw.execute("DROP INDEX IF EXISTS bench_old_state_id")
        raw.close()
        await app.aclose()
    return {name: _ms_summary(values) for name, values in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard_reads")
    parser.add_argument("sqlite_url")
    parser.add_argument("postgres_url")
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args(argv)
    print("| store | read | variant | calls | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for store, url in (("SQLite", args.sqlite_url), ("PostgreSQL", args.postgres_url)):
        for name, m in asyncio.run(measure(url, args.requests)).items():
            read, variant = name.split(" ")
            print(
                f"| {store} | {read} counts | {variant} | {m['requests']} | {m['p50_ms']:.2f} "
                f"| {m['p99_ms']:.2f} | {m['max_ms']:.2f} |"
            )


if __name__ == "__main__":
    main()
