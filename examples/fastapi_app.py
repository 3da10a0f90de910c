"""A FastAPI service that signs users up and welcomes them with a rota run.

The signup row and the welcome run are written in ONE PostgreSQL transaction: a
signup that fails (here: an email already taken) leaves no run behind, and a run
never welcomes a user who does not exist. docs/fastapi.md runs it:

    uvicorn examples.fastapi_app:api --port 8000              # the web service
    rota worker --app examples.fastapi_app:app                 # runs the welcomes
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from fastapi import FastAPI, HTTPException, Request
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

import rota
from rota.contrib.fastapi import Enqueue, lifespan

DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")

app = rota.App(DATABASE_URL)


@app.handler("welcome")
def welcome(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
    ctx.log.info(f"welcoming {payload['email']}")
    return f"welcomed {payload['email']}"


@asynccontextmanager
async def service(web: FastAPI) -> AsyncIterator[dict[str, Any]]:
    """The service's own pool for its tables, beside rota's lifespan."""
    async with (
        lifespan(app)(web) as rota_state,
        AsyncConnectionPool(DATABASE_URL, open=False) as pool,
    ):
        async with pool.connection() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS signups (email text PRIMARY KEY, run_id bigint)"
            )
        yield {**rota_state, "pool": pool}


api = FastAPI(lifespan=service)


class Signup(BaseModel):
    email: str


@api.post("/signups", status_code=201)
async def sign_up(signup: Signup, enqueue: Enqueue, request: Request) -> dict[str, Any]:
    pool: AsyncConnectionPool = request.state.pool
    try:
        async with pool.connection() as conn, conn.transaction():
            # One transaction: the run exists only if the signup is committed.
            run_id = await enqueue("welcome", {"email": signup.email}, connection=conn)
            await conn.execute(
                "INSERT INTO signups (email, run_id) VALUES (%s, %s)", (signup.email, run_id)
            )
    except psycopg.errors.UniqueViolation:
        raise HTTPException(409, f"{signup.email} has signed up already") from None
    return {"email": signup.email, "welcome_run": run_id}


@api.post("/reports", status_code=202)
async def request_report(enqueue: Enqueue) -> dict[str, int]:
    """No transaction of ours here: the run is written on rota's own connection."""
    return {"run": await enqueue("welcome", {"email": "reports@example.com"})}


@api.get("/runs/{run_id}")
async def run_state(run_id: int) -> dict[str, Any]:
    try:
        run = await asyncio.to_thread(app.get_run, run_id)
    except rota.RunNotFound:
        raise HTTPException(404, f"run {run_id} does not exist") from None
    return {"id": run.id, "state": run.state.value, "result": run.result}
