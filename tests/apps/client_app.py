"""Handlers the client tests (Python and TypeScript) drive through a live server: the
examples `make run` serves (so the README's client examples run as printed against this
server too) and three of the tests' own."""

from __future__ import annotations

import asyncio
from typing import Any

import rota
from rota.examples import app


@app.handler("echo")
async def echo(ctx: rota.RunContext, payload: Any) -> Any:
    ctx.log.info("echoing")
    return payload


@app.handler("doomed", max_attempts=1)
async def doomed(ctx: rota.RunContext, payload: Any) -> None:
    raise RuntimeError("doomed on purpose")


@app.handler("sleepy", timeout=60)
async def sleepy(ctx: rota.RunContext, payload: Any) -> str:
    """Runs until cancelled (or a minute passes)."""
    for _ in range(600):
        if ctx.is_cancelled():
            return "stopped"
        await asyncio.sleep(0.1)
    return "slept"
