"""The charts' reads (issue 29 item 4) at 1,000,000 finished runs rolled up, on SQLite
and PostgreSQL (docs/benchmarks.md, "the charts' reads"). Not a test: no thresholds.

    .venv/bin/python -m bench.chart_reads SQLITE_URL POSTGRES_URL [--runs N] [--requests N]

Each database must be empty (a fresh file; a fresh PostgreSQL database): it is migrated,
then N finished runs are written straight into history, spread evenly over the 7 days
before now (3 namespaces, 20 handlers over 5 queues; 90 % succeeded, 7 % failed, 2 %
dead-lettered, 1 % cancelled; pickup delays from under 100 ms to over 10 minutes). The
leader's rollup is run until caught up (timed, batches counted), then every range x by
is read ``--requests`` times, interleaved, through the use case the API and the page
call (services.charts: the store's read plus the series built from it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import rota
from rota.domain.access import Principal
from rota.domain.charts import ChartBy, ChartRange
from rota.services import charts as chart_service
from rota.store.port import Store

WEEK = 7 * 86400
COLUMNS = (
    "id, namespace, handler, queue, state, payload, run_at, sort_at, attempt, max_attempts,"
    " created_at, started_at, finished_at"
)
# Run i: namespace i % 3, handler i % 20 (queue = handler % 5), state by i % 100, a
# pickup delay by i % 100 and i; finished evenly over the week before :now.
SQLITE_FILL = f"""
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :runs - 1),
r AS (
    SELECT i, :now - :week + (i + 0.5) * (:week - 120.0) / :runs AS finished_at,
           CASE WHEN i % 100 = 0 THEN 700.0 WHEN i % 10 = 0 THEN 30.0
                WHEN i % 3 = 0 THEN 2.5 ELSE (i * 37 % 1000) / 10000.0 END AS waited
    FROM n
)
INSERT INTO rota_runs_history ({COLUMNS})
SELECT i + 1, 'ns' || (i % 3), 'handler' || (i % 20), 'queue' || (i % 20 % 5),
       CASE WHEN i % 100 < 90 THEN 'succeeded' WHEN i % 100 < 97 THEN 'failed'
            WHEN i % 100 < 99 THEN 'dead_lettered' ELSE 'cancelled' END,
       '{{}}', finished_at - 1 - waited, finished_at - 1 - waited, 1, 3,
       finished_at - 1 - waited, finished_at - 1, finished_at
FROM r;
"""
POSTGRES_FILL = f"""
INSERT INTO rota_runs_history ({COLUMNS})
SELECT i + 1, 'ns' || (i %% 3), 'handler' || (i %% 20), 'queue' || (i %% 20 %% 5),
       CASE WHEN i %% 100 < 90 THEN 'succeeded' WHEN i %% 100 < 97 THEN 'failed'
            WHEN i %% 100 < 99 THEN 'dead_lettered' ELSE 'cancelled' END,
       '{{}}', f - w - interval '1 second', f - w - interval '1 second', 1, 3,
       f - w - interval '1 second', f - interval '1 second', f
FROM (
    SELECT i, now() - interval '7 days'
              + (i + 0.5) * (interval '7 days' - interval '120 seconds') / %(runs)s AS f,
           make_interval(secs => CASE WHEN i %% 100 = 0 THEN 700.0 WHEN i %% 10 = 0 THEN 30.0
                                      WHEN i %% 3 = 0 THEN 2.5
                                      ELSE (i * 37 %% 1000) / 10000.0 END) AS w
    FROM generate_series(0, %(runs)s - 1) AS i
) AS r;
SELECT setval('rota_run_id_seq', %(runs)s + 1);
"""


def _fill(url: str, runs: int) -> None:
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(SQLITE_FILL, {"runs": runs, "now": time.time(), "week": WEEK})
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for statement in POSTGRES_FILL.split(";\n"):
                if statement.strip():
                    conn.execute(statement, {"runs": runs})  # type: ignore[arg-type]
            conn.execute("ANALYZE")


async def _roll_up(store: Store) -> tuple[float, int]:
    started = time.perf_counter()
    batches = 1
    now = await store.now(None)
    while not (await store.count_chart_batch(now)).caught_up:
        batches += 1
    return time.perf_counter() - started, batches


async def measure(url: str, runs: int, requests: int) -> dict[str, Any]:
    app = rota.App(settings=rota.Settings(database_url=url))
    store = await app.store()  # migrated
    started = time.perf_counter()
    await asyncio.to_thread(_fill, url, runs)
    filled = time.perf_counter() - started
    rollup_seconds, batches = await _roll_up(store)
    viewer = Principal(subject="bench", kind="jwt", scopes=frozenset(), namespaces=None)
    asked = [(r, b) for r in ChartRange for b in ChartBy]
    samples: dict[str, list[float]] = {f"{r.value} by {b.value}": [] for r, b in asked}
    rows: dict[str, int] = {}
    for _ in range(requests):
        for r, b in asked:
            started = time.perf_counter()
            charts = await chart_service.charts(store, viewer, r, b)
            samples[f"{r.value} by {b.value}"].append((time.perf_counter() - started) * 1000)
            rows[f"{r.value} by {b.value}"] = sum(s.finished for s in charts.series)
    again_seconds, _ = await _roll_up(store)  # a caught-up turn: one batch
    app.close()
    return {
        "fill_seconds": round(filled, 1),
        "rollup_seconds": round(rollup_seconds, 1),
        "rollup_batches": batches,
        "caught_up_turn_ms": round(again_seconds * 1000, 1),
        "median_ms": {k: round(statistics.median(v), 1) for k, v in samples.items()},
        "runs_in_range": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=21)
    args = parser.parse_args()
    for url in args.urls:
        print(url.split(":")[0], asyncio.run(measure(url, args.runs, args.requests)), flush=True)


if __name__ == "__main__":
    main()
