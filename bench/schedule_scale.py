"""Issue 25 item 3: what planning N per-minute schedules costs, and whether a slot's runs
are all committed before the slot (PostgreSQL).

Alone: ``python -m bench.schedule_scale [--schedules 100000] [--slots 3]``. On a fresh
PostgreSQL database:

- N jobs ``* * * * *`` (one saved through rota.services.schedules, the others copied from it in
  SQL: making 100,000 one call at a time is not what is measured);
- the leader's planner (its defaults: a tick every second on the half-second grid, 15 s
  ahead plus the lead it learns, 500 jobs a batch, 100 batches a tick) ticks on its
  grid from before the first slot until ``--slots`` + 1 consecutive minute slots have
  every run; the first slot is its warm-up (a planner that starts behind learns its
  pace there: ADR 0029). The ticks are real work on the real database, at simulated
  instants (the slots are in the future, so nothing waits for the wall clock); a tick
  that takes longer than a second delays the next one, as the leader's loop does.

Reports per slot: the ticks that planned it, the planner's lead then, when the last run was
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
from rota.engine.planner import Planner
from rota.services import schedules

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
RUNS_SQL = "SELECT slot_at, count(*) FROM rota_runs WHERE slot_at = ANY(%s) GROUP BY 1"


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


async def _plan_slots(url: str, first: datetime, count: int, slots: int) -> list[dict[str, Any]]:
    """The leader's planner ticking on its grid through ``slots`` + 1 minute slots (the
    first is its warm-up: the planner learns its pace there); returns one row per slot."""
    settings = rota.Settings()
    horizon = timedelta(seconds=settings.planner_horizon_seconds)
    period = settings.planner_interval_seconds
    wanted = [first + timedelta(minutes=k) for k in range(slots + 1)]
    done: dict[datetime, dict[str, Any]] = {}
    cost = {slot: [0.0, 0.0, 0] for slot in wanted}  # wall s, CPU s, ticks
    app = _app(url)
    try:
        store = await app.store()
        planner = Planner(store, horizon, time.perf_counter)
        grid = rota.clock.next_tick((first - horizon).timestamp() - 1e-6 - period, period)
        before = dict.fromkeys(wanted, 0)
        while len(done) < len(wanted) and grid < wanted[-1].timestamp() + 60:
            lead = planner.lead.total_seconds()
            wall, cpu = time.perf_counter(), time.process_time()
            report = await planner.tick(datetime.fromtimestamp(grid, UTC))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            finished_at = grid + wall  # a long tick delays the next one, as the leader's
            if report.runs_created:
                after = _runs_per_slot(url, wanted)
                for slot in wanted:
                    share = (after[slot] - before[slot]) / report.runs_created
                    if share:
                        cost[slot][0] += wall * share
                        cost[slot][1] += cpu * share
                        cost[slot][2] += 1
                    if after[slot] >= count and slot not in done:
                        done[slot] = {"lead_s": round(lead, 1), "finished_at": finished_at}
                before = after
            grid = rota.clock.next_tick(finished_at, period)
    finally:
        await app.aclose()
    return [
        _slot_row(slot, k == 0, done.get(slot), cost[slot], count) for k, slot in enumerate(wanted)
    ]


def _runs_per_slot(url: str, slots: list[datetime]) -> dict[datetime, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(RUNS_SQL, (slots,)).fetchall()
    counts = {slot: int(n) for slot, n in rows}
    return {slot: counts.get(slot, 0) for slot in slots}


def _slot_row(
    slot: datetime, warm_up: bool, done: dict[str, Any] | None, cost: list[float], count: int
) -> dict[str, Any]:
    wall, cpu, ticks = cost
    committed = None if done is None else round(done["finished_at"] - slot.timestamp(), 2)
    return {
        "slot": slot.strftime("%H:%M:%S"),
        "warm_up": warm_up,
        "lead_at_last_tick_s": None if done is None else done["lead_s"],
        "ticks": int(ticks),
        "last_committed_vs_slot_s": committed,
        "all_before_slot": committed is not None and committed < 0,
        "wall_per_schedule_us": round(wall / count * 1e6, 1),
        "cpu_per_schedule_us": round(cpu / count * 1e6, 1),
    }


def measure(count: int, slots: int) -> dict[str, Any]:
    with pg.fresh_database(pg.ADMIN_URL, "schedule_scale") as url:
        started = time.perf_counter()
        first = asyncio.run(_create(url, count))
        create_s = time.perf_counter() - started
        results = asyncio.run(_plan_slots(url, first, count, slots))
    return {"schedules": count, "create_s": round(create_s, 1), "slots": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--slots", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure(args.schedules, args.slots), indent=2))


if __name__ == "__main__":
    main()
