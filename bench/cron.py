"""(g) Issues 4 and 25: N jobs with cron ``* * * * *`` on PostgreSQL, planned by the leader.

Setup (not measured): a fresh database, N cron jobs saved through rota.services.schedules (in
parallel over a small pool). Then 2 worker processes run ``App.work`` with a no-op
handler; one becomes leader and runs the planner (Settings defaults: a tick every
second, its default horizon). The bench waits across ``cfg.cron_slots`` minute boundaries and
then reads everything from rota_runs, with the database clock on both sides:

- planning: ``created_at`` of a slot's runs, min..max relative to the slot (negative is
  before it), and whether every run existed before its slot;
- start delay: ``started_at - slot_at`` per run (``started_at`` is set at claim);
- exactly once: N runs and N distinct jobs per slot.

Only slots at least FIRST_SLOT_MARGIN_S after the workers started, and after one more
slot, are measured: the leader election and the first tick are not inside any measured
slot, and the planner has planned one slot in view, from which it learns how far ahead
it must start (its lead, ADR 0029). Runs of earlier slots are reported as warm-up.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

import rota
from bench import pg, rota_runner
from bench.config import BenchConfig
from bench.procs import WorkerGroup
from bench.results import Results, run_async
from bench.systems import RotaWorkerSettings, rota_system

HORIZON_S = rota.Settings().planner_horizon_seconds  # the planner runs at its default
FIRST_SLOT_MARGIN_S = HORIZON_S + 5.0  # election + first tick + the horizon, with room
LEARNING_SLOTS = 1  # slots the planner plans before the measured ones (its lead, ADR 0029)
SETTLE_S = 45.0  # after the last slot: its runs must be done by then
POLL_S = 0.5
VISIBLE_POLL_S = 0.1
# Watch runs appear from before the planner's first tick for a slot to 5 s after it: the
# planner starts a slot up to its horizon plus its lead ahead (the lead: about the time
# planning a slot takes, ~16 s for 100,000 schedules here).
VISIBLE_WINDOW_S = (2 * HORIZON_S + 5.0, 5.0)
VISIBLE_SQL = (
    "SELECT extract(epoch FROM clock_timestamp() - %s)::float8, count(*)"
    " FROM rota_runs WHERE slot_at = %s"
)
CREATE_PARALLEL = 16
CREATE_SECONDS_PER_JOB = 0.006  # the setup's bound (~1.2 ms a job measured here, loaded)

SLOT_SQL = """
SELECT slot_at, count(*), count(DISTINCT job_id),
       extract(epoch FROM min(created_at) - slot_at)::float8,
       extract(epoch FROM max(created_at) - slot_at)::float8,
       count(*) FILTER (WHERE started_at IS NULL),
       percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (
           ORDER BY extract(epoch FROM started_at - slot_at))::float8[],
       extract(epoch FROM max(started_at - slot_at))::float8,
       count(*) FILTER (WHERE state = 'succeeded'),
       extract(epoch FROM min(started_at - slot_at))::float8
FROM rota_runs WHERE job_id IS NOT NULL
GROUP BY slot_at ORDER BY slot_at
"""
OVERALL_SQL = """
SELECT count(*),
       percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (
           ORDER BY extract(epoch FROM started_at - slot_at))::float8[],
       extract(epoch FROM max(started_at - slot_at))::float8
FROM rota_runs WHERE job_id IS NOT NULL AND slot_at = ANY(%s)
"""
# Whether any run of the slot is still in the queue: stops at the first one found while
# the slot drains. (A count of the slot's succeeded runs read all of history every
# 0.5 s, on the server the last slot was draining on: that slot was the worst of three
# in every run.) That they all succeeded is read after, from SLOT_SQL.
DRAINING_SQL = "SELECT EXISTS (SELECT 1 FROM rota_runs_live WHERE slot_at = %s)"
LEFT_SQL = "SELECT count(*) FROM rota_runs_live WHERE slot_at = %s"


async def create_jobs(url: str, count: int) -> float:
    """Save ``count`` cron jobs named cron-00000...; returns the seconds it took."""
    from rota.services import schedules

    app = rota_runner.make_app(url, pool_size=8)
    try:
        store = await app.store()
        started = time.perf_counter()
        for offset in range(0, count, CREATE_PARALLEL):
            specs = [
                schedules.job_spec(app.registry, f"cron-{i:05d}", "noop", cron="* * * * *")
                for i in range(offset, min(count, offset + CREATE_PARALLEL))
            ]
            await asyncio.gather(*(schedules.save_job(store, app.clock, s) for s in specs))
        return time.perf_counter() - started
    finally:
        await app.aclose()


def _next_minute(at: float) -> float:
    return (int(at) // 60 + 1) * 60.0


def _utc(at: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(at, dt.UTC)


def _wait_for_slots(
    url: str, group: WorkerGroup, slots: list[float], expected: int
) -> dict[str, Any]:
    """Poll until the last slot's runs have all left the queue, or SETTLE_S after it. Around each
    slot, also watch its runs appear: created_at is the planner tick's ``now`` (one value
    per tick), so when the runs became visible (committed) is only seen from outside."""
    deadline = slots[-1] + SETTLE_S
    visible: dict[float, dict[str, float]] = {slot: {} for slot in slots}
    with pg.Probe(url) as probe:
        while True:
            group.check_errors()
            now = time.time()
            watching = [
                s
                for s in slots
                if s - VISIBLE_WINDOW_S[0] <= now <= s + VISIBLE_WINDOW_S[1]
                and "all_s" not in visible[s]
            ]
            for slot in watching:
                [(since_slot, count)] = probe.rows(VISIBLE_SQL, (_utc(slot), _utc(slot)))
                if count and "first_s" not in visible[slot]:
                    visible[slot]["first_s"] = float(since_slot)  # type: ignore[arg-type]
                if count >= expected:  # type: ignore[operator]
                    visible[slot]["all_s"] = float(since_slot)  # type: ignore[arg-type]
            if now > slots[-1]:
                if not probe.scalar(DRAINING_SQL, (_utc(slots[-1]),)):
                    waited: dict[str, Any] = {
                        "finished_after_last_slot_s": round(now - slots[-1], 2)
                    }
                    break
                if now > deadline:
                    left = probe.scalar(LEFT_SQL, (_utc(slots[-1]),))
                    waited = {"unfinished_in_last_slot": left}
                    break
            time.sleep(VISIBLE_POLL_S if watching else POLL_S)
    waited["visible"] = {_utc(s).strftime("%H:%M:%S"): v for s, v in visible.items()}
    return waited


def _slot_rows(url: str, measured: list[float]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with pg.Probe(url) as probe:
        rows = probe.rows(SLOT_SQL)
        overall = probe.rows(OVERALL_SQL, ([_utc(s) for s in measured],))[0]
    measured_set = {_utc(s) for s in measured}
    slots = [
        {
            "slot_at": r[0].strftime("%H:%M:%S"),
            "measured": r[0] in measured_set,
            "runs": r[1],
            "jobs": r[2],
            "created_first_s": r[3],
            "created_last_s": r[4],
            "not_started": r[5],
            "p50_s": r[6][0] if r[6] else None,
            "p99_s": r[6][1] if r[6] else None,
            "max_s": r[7],
            "succeeded": r[8],
            "min_s": r[9],
        }
        for r in rows
    ]
    total = {
        "runs": overall[0] if overall else 0,
        "p50_s": overall[1][0] if overall and overall[1] else None,
        "p99_s": overall[1][1] if overall and overall[1] else None,
        "max_s": overall[2] if overall else None,
    }
    return slots, total


def cron_schedules(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    count, boundaries = cfg.cron_schedules, cfg.cron_slots
    variant = f"{count:,} schedules, {boundaries} minute slot{'s' if boundaries > 1 else ''}"
    system = rota_system(worker)

    def measure() -> dict[str, Any]:
        with pg.fresh_database(cfg.admin_url, "cron") as url:
            create_timeout = max(240.0, count * CREATE_SECONDS_PER_JOB)
            run_async(rota_runner.install(url), create_timeout)
            create_s = run_async(create_jobs(url, count), create_timeout)
            kwargs = [system.worker_kwargs(url, i) for i in range(2)]
            with WorkerGroup(rota_runner.drain_worker, kwargs, system.loop) as group:
                group.start()
                started = group.go()
                first = _next_minute(started + FIRST_SLOT_MARGIN_S) + 60 * LEARNING_SLOTS
                measured = [first + 60 * k for k in range(boundaries)]
                waited = _wait_for_slots(url, group, measured, count)
                group.stop()
                reports = group.collect(timeout=60)
            slots, overall = _slot_rows(url, measured)
        for slot in slots:
            slot.update(waited["visible"].get(slot["slot_at"], {}))
        warnings: dict[str, int] = {}
        for report in reports.values():
            for message, n in report.get("warnings", {}).items():
                warnings[message] = warnings.get(message, 0) + n
        return {
            "create_s": round(create_s, 1),
            "slots": slots,
            "overall": overall,
            "warnings": warnings,
            **waited,
        }

    outcome = results.attempt("cron", "rota", variant, measure)
    if outcome is None:
        return
    measured = [s for s in outcome["slots"] if s["measured"]]
    if len(measured) < boundaries:
        raise_missing = f"{len(measured)} of {boundaries} measured slots made any run"
        results.failures.append(
            {"scenario": "cron", "system": "rota", "variant": variant, "error": raise_missing}
        )
    p99 = outcome["overall"]["p99_s"]
    value = p99 if p99 is not None else float("nan")
    results.add("cron", "rota", variant, value, schedules=count, horizon_s=HORIZON_S, **outcome)
