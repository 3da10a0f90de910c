"""The charts' reads (issue 29 item 4) at 1,000,000 finished runs rolled up, on SQLite
and PostgreSQL (docs/benchmarks.md, "the charts' reads"). Not a test: no thresholds.

    .venv/bin/python -m bench.chart_reads SQLITE_URL POSTGRES_URL [--runs N] [--requests N]

Each database must be empty (a fresh file; a fresh PostgreSQL database): it is migrated,
then N finished runs are written straight into history, spread evenly over the 7 days
before now (3 namespaces, 20 handlers over 5 queues; 90 % succeeded, 7 % failed, 2 %
dead-lettered, 1 % cancelled, each in every key's hours; pickup delays from under 100 ms
to over 10 minutes). The leader's rollup is run until caught up (timed, batches
counted), then every range x by is read ``--requests`` times, interleaved, three ways:
the use case the API and the page call (services.charts), GET /api/v1/stats/series and
the /charts page (both through the real ASGI app, in process: routing, auth, JSON or the
template included). ``--profile`` prints cProfile's top functions of the slowest read of
each kind.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import re
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx

import rota
from rota.api.auth import mint_token
from rota.api.settings import ApiSettings
from rota.asgi import create_api
from rota.domain.access import Principal
from rota.domain.charts import ChartBy, ChartRange
from rota.services import charts as chart_service
from rota.store.port import Store

SETTINGS = ApiSettings(env="test", signing_key="bench-signing-key-0123456789abcdef-0123")

WEEK = 7 * 86400
COLUMNS = (
    "id, namespace, handler, queue, state, payload, run_at, sort_at, attempt, max_attempts,"
    " created_at, started_at, finished_at"
)
# Run i: namespace i % 3, handler i % 20 (queue = handler % 5), state by i / 60 % 100
# (so every key sees every state: a state by i % 100 gave each key one or two, and the
# rollup 1.5 rows a key and hour where real traffic has nearer four), a pickup delay by
# i % 100 and i; finished evenly over the week before :now.
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
       CASE WHEN i / 60 % 100 < 90 THEN 'succeeded' WHEN i / 60 % 100 < 97 THEN 'failed'
            WHEN i / 60 % 100 < 99 THEN 'dead_lettered' ELSE 'cancelled' END,
       '{{}}', finished_at - 1 - waited, finished_at - 1 - waited, 1, 3,
       finished_at - 1 - waited, finished_at - 1, finished_at
FROM r;
"""
POSTGRES_FILL = f"""
INSERT INTO rota_runs_history ({COLUMNS})
SELECT i + 1, 'ns' || (i %% 3), 'handler' || (i %% 20), 'queue' || (i %% 20 %% 5),
       CASE WHEN i / 60 %% 100 < 90 THEN 'succeeded' WHEN i / 60 %% 100 < 97 THEN 'failed'
            WHEN i / 60 %% 100 < 99 THEN 'dead_lettered' ELSE 'cancelled' END,
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


async def _signed_in(client: httpx.AsyncClient, token: str) -> None:
    """Through the dashboard's sign-in form, as a browser would."""
    form = await client.get("/signin")
    found = re.search(r'name="signin_token" value="([^"]+)"', form.text)
    assert found is not None, form.text[:300]
    answer = await client.post(
        "/signin", data={"credential": token, "signin_token": found[1], "next": "/"}
    )
    assert answer.status_code == 303, answer.text[:300]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _profiled(read: Callable[[], Awaitable[Any]]) -> None:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(5):
        await read()
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


async def measure(url: str, runs: int, requests: int, profile: bool) -> dict[str, Any]:
    app = rota.App(settings=rota.Settings(database_url=url))
    store = await app.store()  # migrated
    started = time.perf_counter()
    await asyncio.to_thread(_fill, url, runs)
    filled = time.perf_counter() - started
    rollup_seconds, batches = await _roll_up(store)
    viewer = Principal(subject="bench", kind="jwt", scopes=frozenset(), namespaces=None)
    token = mint_token(SETTINGS, "bench", datetime.now(UTC), scopes=("jobs:read",))
    api = create_api(app, SETTINGS)
    transport = httpx.ASGITransport(app=api)
    async with (
        api.router.lifespan_context(api),
        httpx.AsyncClient(transport=transport, base_url="http://rota.test") as client,
    ):
        await _signed_in(client, token)
        bearer = {"Authorization": f"Bearer {token}"}

        def reads(r: ChartRange, b: ChartBy) -> dict[str, Callable[[], Awaitable[Any]]]:
            query = {"range": r.value, "by": b.value}
            return {
                "use case": lambda: chart_service.charts(store, viewer, r, b),
                "api": lambda: client.get("/api/v1/stats/series", params=query, headers=bearer),
                "page": lambda: client.get("/charts", params=query),
            }

        asked = {f"{r.value} by {b.value}": reads(r, b) for r in ChartRange for b in ChartBy}
        samples: dict[str, list[float]] = {
            f"{name} {kind}": [] for name, kinds in asked.items() for kind in kinds
        }
        for _ in range(requests):
            for name, kinds in asked.items():
                for kind, read in kinds.items():
                    started = time.perf_counter()
                    answer = await read()
                    samples[f"{name} {kind}"].append((time.perf_counter() - started) * 1000)
                    if isinstance(answer, httpx.Response):
                        assert answer.status_code == 200, answer.text[:300]
        sizes = {name: len((await kinds["api"]()).content) for name, kinds in asked.items()}
        if profile:
            for kind in ("use case", "api", "page"):
                print(f"--- {url.split(':')[0]}: 7d by handler, {kind}", flush=True)
                await _profiled(asked["7d by handler"][kind])
        again_seconds, _ = await _roll_up(store)  # a caught-up turn: one batch
    return {
        "fill_seconds": round(filled, 1),
        "rollup_seconds": round(rollup_seconds, 1),
        "rollup_batches": batches,
        "caught_up_turn_ms": round(again_seconds * 1000, 1),
        "median_ms": {k: round(statistics.median(v), 1) for k, v in samples.items()},
        "p99_ms": {k: round(_percentile(v, 0.99), 1) for k, v in samples.items()},
        "api_body_bytes": sizes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=21)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    for url in args.urls:
        result = asyncio.run(measure(url, args.runs, args.requests, args.profile))
        print(url.split(":")[0], result, flush=True)


if __name__ == "__main__":
    main()
