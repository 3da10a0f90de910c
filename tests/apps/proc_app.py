"""Handlers for worker processes started by the tests.

Each handler appends a line to ``$ROTA_TEST_MARKS/<node>.log`` for what it did, so a
test can tell which process executed what, and how often, after the fact.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import rota

app = rota.App()
MARKS = Path(os.environ.get("ROTA_TEST_MARKS", "."))
if os.environ.get("ROTA_TEST_KILL_IN_RELEASE"):  # tests/engine/test_workflow_processes.py
    from tests.faults import kill_inside_release

    kill_inside_release(MARKS / f"{os.environ['ROTA_TEST_KILL_IN_RELEASE']}.log")


def mark(ctx: rota.RunContext, *words: object) -> None:
    line = " ".join(str(w) for w in (ctx.run_id, ctx.fence, ctx.worker_id, *words))
    with (MARKS / f"{ctx.worker_id}.log").open("a") as f:
        f.write(line + "\n")
        f.flush()


@app.handler("record")
async def record(ctx: rota.RunContext, payload: Any) -> Any:
    mark(ctx, "executed")
    return payload


@app.handler("broken", max_attempts=1)
async def broken(ctx: rota.RunContext, payload: Any) -> None:
    mark(ctx, "executed")
    raise RuntimeError("broken on purpose")


@app.handler("slow", max_attempts=5, retry=rota.retry.Fixed(0))
async def slow(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Sleeps ``seconds`` (only on attempt 1 when ``first_only``), marking start and end."""
    mark(ctx, "started")
    if ctx.attempt == 1 or not payload.get("first_only"):
        await asyncio.sleep(payload["seconds"])
    mark(ctx, "finished")
    return {"worker": ctx.worker_id, "fence": ctx.fence}


@app.handler("tx-write", max_attempts=5, retry=rota.retry.Fixed(0))
async def tx_write(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Writes a row through ctx.transaction(); hangs after the write on attempt 1 when
    asked, so the test can kill the worker between the write and the completion."""
    conn = await ctx.transaction()
    await conn.execute(
        "INSERT INTO side_effects (run_id, fence) VALUES (%s, %s)", (ctx.run_id, ctx.fence)
    )
    mark(ctx, "wrote")
    if payload.get("hang_first") and ctx.attempt == 1:
        await asyncio.sleep(3600)
    return {"fence": ctx.fence}


@app.handler("keyed", key_limit=2)
async def keyed(ctx: rota.RunContext, payload: Any) -> None:
    """Short work under a per-key limit."""
    mark(ctx, "started")
    await asyncio.sleep(0.05)


@app.handler("single", singleton=True)
async def single(ctx: rota.RunContext, payload: Any) -> None:
    """At most one of these runs anywhere at a time."""
    mark(ctx, "started")
    await asyncio.sleep(0.05)


@app.handler("gpu-job", tags=["gpu"])
async def gpu_job(ctx: rota.RunContext, payload: Any) -> str:
    mark(ctx, "executed")
    return ctx.worker_id


@app.handler("effect", max_attempts=5, retry=rota.retry.Fixed(0))
async def effect(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Writes one side_effects row through ctx.transaction() (it commits with the
    completion, under the fence) and holds the transaction ``hold`` seconds. Never
    fails by itself: any failed attempt is the infrastructure's (the chaos suite)."""
    conn = await ctx.transaction()
    await conn.execute(
        "INSERT INTO side_effects (run_id, fence) VALUES (%s, %s)", (ctx.run_id, ctx.fence)
    )
    if payload.get("hold"):
        await asyncio.sleep(payload["hold"])
    return {"fence": ctx.fence}


@app.handler("clock")
async def clock(ctx: rota.RunContext, payload: Any) -> dict[str, Any]:
    """This process's wall clock (a chaos scenario checks that faketime shifted it)."""
    mark(ctx, "executed")
    return {"worker": ctx.worker_id, "time": time.time()}


@app.handler("rated", rate_limit="20/second")
async def rated(ctx: rota.RunContext, payload: Any) -> None:
    """Short work under a rate of 20 starts a second (per rate_key)."""
    mark(ctx, "started")
    await asyncio.sleep(0.01)


@app.handler("cancellable-async", max_attempts=1)
async def cancellable_async(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
    """Sleeps ``seconds``; marks a cancellation of its task (which it lets through).
    With ``returns_once_cancelled``, returns as soon as the test has sent its cancel
    (the file ``cancel-sent-<run id>`` exists): usually before the worker learns of it."""
    mark(ctx, "started")
    try:
        if payload.get("returns_once_cancelled"):
            sent = MARKS / f"cancel-sent-{ctx.run_id}"
            give_up = time.monotonic() + payload["seconds"]
            while not sent.exists() and time.monotonic() < give_up:
                await asyncio.sleep(0.01)
        else:
            await asyncio.sleep(payload["seconds"])
    except asyncio.CancelledError:
        mark(ctx, "task-cancelled")
        raise
    return "slept"


@app.handler("cancellable-sync", max_attempts=1)
def cancellable_sync(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
    """A plain def: polls ``ctx.is_cancelled()`` for at most ``seconds``."""
    mark(ctx, "started")
    give_up = time.monotonic() + payload["seconds"]
    while time.monotonic() < give_up:
        if ctx.is_cancelled():
            mark(ctx, "saw-cancel")
            return "stopped"
        time.sleep(0.01)
    return "slept"
