"""Issue 25 item 3: what planning N per-minute schedules costs, and whether a slot's runs
are all committed before the slot (PostgreSQL).

Alone: ``python -m bench.schedule_scale [--schedules 100000] [--slots 3]``. On a fresh
PostgreSQL database:

- N jobs ``* * * * *`` (one saved through rota.schedules, the others copied from it in
  SQL: making 100,000 one call at a time is not what is measured);
- for each of ``--slots`` consecutive minute slots, the leader's planner (its defaults:
  a tick every second on the half-second grid, 15 s ahead, 500 jobs a batch, 100
  batches a tick) ticks from the first instant that sees the slot until every job has
  its run; the ticks are real work on the real database, at simulated instants (the
  slots are in the future, so nothing waits for the wall clock). A tick that takes
  longer than a second delays the next one, as the leader's loop does.

Reports per slot: the ticks it took, the wall time of each, when the last run was
committed relative to the slot (negative: before it), and the planning cost per
schedule (wall and this process's CPU; the database's own CPU is not in it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

import rota
from bench import pg
from rota import schedules
from rota.planner import Planner

TEMPLATE = "cron-template"
COPY_SQL = """
INSERT INTO rota_jobs (namespace, name, spec, paused, cursor, next_fire_at, created_at,
                       updated_at)
SELECT namespace, 'cron-' || lpad(i::text, 6, '0'),
       jsonb_set(spec, '{name}', to_jsonb('cron-' || lpad(i::text, 6, '0'))),
       paused, cursor, next_fire_at, created_at, updated_at
FROM rota_jobs, generate_series(1, %s) AS i
WHERE name = %s
"""
RUNS_SQL = "SELECT count(*) FROM rota_runs WHERE slot_at = %s"


def _app(url: str) -> rota.App:
    app = rota.App(url)

    @app.handler("noop")
    async def noop(ctx: rota.RunContext, payload: Any) -> None:
        return None

    return app


async def _create(url: str, count: int) -> datetime:
    """The N jobs; returns their first slot."""
    app = _app(url)
    try:
        store = await app.store()
        spec = schedules.job_spec(app.registry, TEMPLATE, "noop", cron="* * * * *")
        job = await schedules.save_job(store, app.clock, spec)
    finally:
        await app.aclose()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(COPY_SQL, (count - 1, TEMPLATE))
        conn.execute("ANALYZE rota_jobs")
    assert job.next_fire_at is not None
    return job.next_fire_at


async def _plan_slot(url: str, slot: datetime, count: int) -> dict[str, Any]:
    settings = rota.Settings()
    horizon = timedelta(seconds=settings.planner_horizon_seconds)
    period = settings.planner_interval_seconds
    app = _app(url)
    try:
        store = await app.store()
        planner = Planner(store, horizon)
        # The first tick on the half-second grid that sees the slot.
        first = rota.clock.next_tick((slot - horizon).timestamp() - 1e-6, period)
        grid, finished_at, ticks = first, first, []
        wall_total = cpu_total = 0.0
        created = 0
        while created < count and len(ticks) < 100:
            start = max(grid, finished_at)  # a long tick delays the next one
            wall, cpu = time.perf_counter(), time.process_time()
            report = await planner.tick(datetime.fromtimestamp(start, UTC))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            created += report.runs_created
            wall_total, cpu_total = wall_total + wall, cpu_total + cpu
            finished_at = start + wall
            ticks.append({"runs": report.runs_created, "wall_s": round(wall, 2)})
            grid = rota.clock.next_tick(finished_at, period)
        with psycopg.connect(url) as conn:
            row = conn.execute(RUNS_SQL, (slot,)).fetchone()
        runs = int(row[0]) if row else 0
    finally:
        await app.aclose()
    return {
        "slot": slot.strftime("%H:%M:%S"),
        "runs": runs,
        "ticks": ticks,
        "last_committed_vs_slot_s": round(finished_at - slot.timestamp(), 2),
        "all_before_slot": runs == count and finished_at < slot.timestamp(),
        "wall_per_schedule_us": round(wall_total / count * 1e6, 1),
        "cpu_per_schedule_us": round(cpu_total / count * 1e6, 1),
    }


def measure(count: int, slots: int) -> dict[str, Any]:
    with pg.fresh_database(pg.ADMIN_URL, "schedule_scale") as url:
        started = time.perf_counter()
        first = asyncio.run(_create(url, count))
        create_s = time.perf_counter() - started
        results = [
            asyncio.run(_plan_slot(url, first + timedelta(minutes=k), count)) for k in range(slots)
        ]
    return {"schedules": count, "create_s": round(create_s, 1), "slots": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--slots", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure(args.schedules, args.slots), indent=2))


if __name__ == "__main__":
    main()
