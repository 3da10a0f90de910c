"""Handlers for the dashboard's browser tests and screenshots: one that succeeds, one
that always fails (and so is dead-lettered), one that runs until cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

import rota

app = rota.App()


@app.handler("quick")
async def quick(ctx: rota.RunContext, payload: Any) -> dict[str, Any]:
    ctx.log.info("working", step=1)
    await asyncio.sleep(0.3)
    return {"done": True}


@app.handler("boom", max_attempts=2, retry=rota.retry.Fixed(0))
async def boom(ctx: rota.RunContext, payload: Any) -> None:
    ctx.log.warning("about to fail", try_number=ctx.attempt)
    raise RuntimeError(f"upstream refused the export (attempt {ctx.attempt})")


@app.handler("long", timeout=120)
async def long(ctx: rota.RunContext, payload: Any) -> str:
    for step in range(600):
        if ctx.is_cancelled():
            ctx.log.warning("stopping: cancelled", step=step)
            return "stopped"
        ctx.log.info("step", step=step)
        await asyncio.sleep(0.2)
    return "finished"
