"""PostgreSQL restarted during a drain of effect runs (each commits a row through
ctx.transaction() with its completion): nothing lost, no effect twice, no attempt
spent, no worker process restarted; how long the drain took to resume each time."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from chaos import drain, pg
from chaos.harness import Context

NAME = "pg-restart"
TITLE = "PostgreSQL restarted during a drain with ctx.transaction() effects"
BACKEND = "postgres"
TIME_LIMIT = {"small": 180, "full": 420}


def prepare(ctx: Context) -> None:
    ctx.app.list_runs(limit=1)  # migrates


def run(ctx: Context) -> None:
    restarts = ctx.pick(1, 3)
    plan = drain.Drain(runs=ctx.pick(1500, 4000), hold=0.1)
    outages: list[float] = []
    restarted_at: list[str] = []  # the server is shared: say when it was restarted
    recoveries: list[float] = []

    def fault(stop: threading.Event) -> None:
        for n in range(restarts):
            # Spread the restarts over the drain: at 1/(R+1), 2/(R+1), ... of it done.
            target = plan.runs * (n + 1) // (restarts + 2)
            while drain.done_count(ctx) < target:
                if stop.wait(0.2):
                    return
            restarted_at.append(datetime.now(UTC).strftime("%H:%M:%S"))
            outages.append(pg.restart_server())
            back_at = ctx.scalar("SELECT now()")
            recoveries.append(_resumed_after(ctx, back_at, stop))

    drain.run_with_fault(ctx, plan, fault, timeout=ctx.pick(150, 380), database_stays_up=False)
    ctx.figure("restarts", len(outages))
    ctx.figure("restarted at (UTC)", restarted_at)
    ctx.timings("server away (restart command until it answers), s", outages)
    ctx.timings("recovery: server back until a run claimed after it succeeds, s", recoveries)
    ctx.expect(len(outages) == restarts, f"only {len(outages)} of {restarts} restarts happened")


def _resumed_after(ctx: Context, back_at: object, stop: threading.Event) -> float:
    """Seconds from ``back_at`` (database clock) until the first run claimed after it
    succeeded: the drain is really going again, not just flushing what was in flight."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not stop.is_set():
        seconds = ctx.scalar(
            "SELECT extract(epoch FROM min(finished_at) - %s)::float8 FROM rota_runs"
            " WHERE state = 'succeeded' AND started_at >= %s",
            (back_at, back_at),
        )
        if seconds is not None:
            return float(seconds)
        time.sleep(0.1)
    raise AssertionError("the drain did not resume within 120 s of the server coming back")
