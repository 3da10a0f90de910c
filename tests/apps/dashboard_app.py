"""Handlers for the dashboard's browser tests and screenshots: one that succeeds, one
that always fails (and so is dead-lettered), one that runs until cancelled; and a
workflow (extract, then two transforms, then load) whose first step takes a while."""

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
    # An operator's cancel cancels an async handler's task at once (issue 30): the
    # handler sees CancelledError at its next await, says so, and lets it through.
    try:
        for step in range(600):
            ctx.log.info("step", step=step)
            await asyncio.sleep(0.2)
    except asyncio.CancelledError:
        ctx.log.warning("stopping: cancelled")
        raise
    return "finished"


async def wf_extract(ctx: rota.RunContext, payload: Any) -> int:
    ctx.log.info("extracting")
    await asyncio.sleep(float((ctx.workflow_payload or {}).get("extract_seconds", 2.0)))
    return 3


async def wf_transform(ctx: rota.RunContext, payload: Any) -> int:
    return int(ctx.parents["extract"]) * 2


async def wf_load(ctx: rota.RunContext, payload: Any) -> int:
    return sum(int(v) for v in ctx.parents.values())


def add_workflows(target: rota.App) -> None:
    """The workflow "nightly-etl" and its handlers, on ``target`` (this module's app,
    or a test's own App on the same database, which starts runs of it)."""
    for name, fn in (
        ("wf-extract", wf_extract),
        ("wf-transform", wf_transform),
        ("wf-load", wf_load),
    ):
        if target.registry.get(name) is None:
            target.handler(name)(fn)
    flow = rota.Workflow("nightly-etl")
    extract = flow.step("extract", handler="wf-extract")
    left = flow.step("transform-orders", handler="wf-transform", after=[extract])
    right = flow.step("transform-refunds", handler="wf-transform", after=[extract])
    flow.step("load", handler="wf-load", after=[left, right])
    target.workflow(flow)


add_workflows(app)
