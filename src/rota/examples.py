"""Example handlers used by ``make run`` and the README.

rota worker --app rota.examples:app
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import rota

app = rota.App()


@app.handler(
    "send-report",
    max_attempts=3,
    timeout=30,
    retry=rota.retry.ExponentialJitter(base=1.0, cap=300.0),
)
async def send_report(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
    """An async handler: pretends to build and send a report."""
    ctx.log.info("building report", day=payload.get("day"))
    await asyncio.sleep(0.2)
    return {"sent_to": payload.get("to", "team@example.com"), "day": payload.get("day")}


@app.handler("export-csv", timeout=30)
def export_csv(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
    """A plain function: runs in a worker thread."""
    rows = int(payload.get("rows", 100))
    time.sleep(0.1)
    ctx.log.info("exported", rows=rows)
    return {"rows": rows}


@app.handler("flaky", max_attempts=3, retry=rota.retry.Fixed(0.5))
async def flaky(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
    """Fails on its first attempt, succeeds on the next."""
    if ctx.attempt == 1:
        raise ConnectionError("upstream not ready (first attempt always fails)")
    return f"ok on attempt {ctx.attempt}"


@app.handler("long-etl", timeout=60)
async def long_etl(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
    """A longer handler, checking for cancellation between steps."""
    steps = int(payload.get("steps", 8))
    for step in range(steps):
        if ctx.is_cancelled():
            ctx.log.warning("stopping early: cancelled", step=step)
            return {"completed_steps": step}
        ctx.log.info("etl step", step=step, fence=ctx.fence)
        await asyncio.sleep(0.5)
    return {"completed_steps": steps, "fence": ctx.fence}


def install_example_schedule(target: rota.App) -> rota.Job:
    """A report every 15 seconds (6 fields: seconds first), so `make run` shows the
    planner at work at once. Saving it again replaces it: running this twice is harmless."""
    return target.schedule(
        "example-report",
        handler="send-report",
        payload={"day": "today", "to": "team@example.com"},
        cron="*/15 * * * * *",
        overlap="skip",
    )


if __name__ == "__main__":  # `make run`: install the schedule and some work, then serve
    job = install_example_schedule(app)
    print(f"example schedule {job.spec.name!r}: {job.spec.schedule_text(job.created_at)}")
    runs = [
        app.enqueue("export-csv", {"rows": 500}),
        app.enqueue("flaky", {}),
        app.enqueue("long-etl", {"steps": 4}),
    ]
    print(f"enqueued example runs {runs}: the server's embedded worker runs them now")
    app.close()
