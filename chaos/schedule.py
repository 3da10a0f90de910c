"""An every-second schedule as a probe of the leader's duties: while some node leads and
its planner runs, every one-second slot gets exactly one run, whatever fails."""

from __future__ import annotations

import itertools
from datetime import timedelta

from chaos.harness import Context

NAME = "every-second"


def start(ctx: Context) -> int:
    """Create the schedule; returns its job id."""
    job = ctx.app.schedule(
        NAME, handler="record", cron="* * * * * *", misfire="run_all", catch_up_window=60
    )
    return int(job.id)


def wait_planned_after(ctx: Context, epoch: float, what: str, timeout: float = 30.0) -> None:
    """Until a slot 3 s past ``epoch`` (epoch seconds) has been planned."""
    ctx.wait(
        lambda: ctx.scalar(
            "SELECT count(*) FROM rota_runs WHERE job_id IS NOT NULL"
            " AND slot_at > to_timestamp(%s) + interval '3 s'",
            (epoch,),
        ),
        timeout,
        f"slots planned {what}",
    )


def stop_and_check(ctx: Context, job_id: int) -> int:
    """Pause the schedule, let its runs finish, then check that no slot between the
    first and the last was missed or planned twice. Returns how many were planned."""
    ctx.app_call(lambda app: app.pause_schedule(NAME))
    ctx.wait(
        lambda: (
            not ctx.scalar(
                "SELECT count(*) FROM rota_runs WHERE job_id = %s"
                " AND state NOT IN ('succeeded', 'failed', 'timed_out', 'cancelled',"
                " 'dead_lettered')",
                (job_id,),
            )
        ),
        60,
        "the scheduled runs to finish",
    )
    slots = [
        row[0]
        for row in ctx.sql(
            "SELECT slot_at FROM rota_runs WHERE job_id = %s ORDER BY slot_at", (job_id,)
        )
    ]
    doubled = sorted({s for s in slots if slots.count(s) > 1})
    gaps = [
        (a.isoformat(), b.isoformat())
        for a, b in itertools.pairwise(slots)
        if b - a > timedelta(seconds=1)
    ]
    ctx.expect(not doubled, f"slots planned twice: {doubled[:5]}")
    ctx.expect(not gaps, f"slots missed between: {gaps[:5]}")
    ctx.figure("slots planned", len(slots))
    ctx.figure("slots missed / doubled", f"{len(gaps)} / {len(doubled)}")
    return len(slots)
