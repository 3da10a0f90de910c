"""rota.contrib.fastapi in a real FastAPI application: the lifespan opens the App's
store before the first request and closes the App at shutdown; routes get an Enqueuer;
a route enqueueing on its own psycopg transaction (PostgreSQL) leaves a run only when
that commits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

import rota
from rota.contrib.fastapi import Enqueue, LifespanMissing, lifespan
from rota.testing import assert_enqueued, drain

pytestmark = pytest.mark.timeout(60)


@asynccontextmanager
async def serving(api: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The application on this loop, its lifespan run as a server runs it."""
    async with api.router.lifespan_context(api):
        transport = httpx.ASGITransport(app=api, raise_app_exceptions=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://web.test") as client:
            yield client


def make_api(app: rota.App, with_lifespan: bool = True) -> FastAPI:
    api = FastAPI(lifespan=lifespan(app)) if with_lifespan else FastAPI()

    @api.post("/reports/{day}")
    async def report(day: str, enqueue: Enqueue) -> dict[str, int]:
        return {"run": await enqueue("send-report", {"day": day})}

    @api.post("/orders/{order}")
    async def order(order: int, enqueue: Enqueue, fail: bool = False) -> dict[str, int]:
        url = app.settings.database_url
        async with (
            await psycopg.AsyncConnection.connect(url) as conn,
            conn.transaction(force_rollback=fail),
        ):
            await conn.execute("INSERT INTO orders VALUES (%s)", (order,))
            run_id = await enqueue("send-report", {"order": order}, connection=conn)
        return {"run": run_id}

    return api


def with_handler(app: rota.App) -> rota.App:
    @app.handler("send-report")
    async def send_report(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
        return f"sent {payload}"

    return app


async def test_a_route_enqueues_through_the_dependency(tmp_path: Path):
    app = with_handler(rota.App(f"sqlite:///{tmp_path / 'rota.db'}", clock=rota.FakeClock()))
    async with serving(make_api(app)) as client:
        assert (tmp_path / "rota.db").exists()  # opened at startup, before any request
        response = await client.post("/reports/2026-12-01")
        assert response.status_code == 200, response.text
        run_id = response.json()["run"]
        assert_enqueued(app, "send-report", {"day": "2026-12-01"})
        [done] = drain(app)
        assert (done.run_id, done.result) == (run_id, "sent {'day': '2026-12-01'}")
    # Closed at shutdown: the App's sync loop thread is gone.
    assert app._stores._sync is None


async def test_without_the_lifespan_a_route_says_what_is_missing(tmp_path: Path):
    app = with_handler(rota.App(f"sqlite:///{tmp_path / 'rota.db'}"))
    async with serving(make_api(app, with_lifespan=False)) as client:
        with pytest.raises(LifespanMissing, match=r"FastAPI\(lifespan=rota.contrib.fastapi"):
            await client.post("/reports/2026-12-01")


@pytest.mark.postgres
async def test_a_routes_own_transaction_carries_the_run(pg_clean: str):
    with psycopg.connect(pg_clean, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS orders")
        conn.execute("CREATE TABLE orders (id int)")
    app = with_handler(rota.App(pg_clean))
    async with serving(make_api(app)) as client:
        assert (await client.post("/orders/1", params={"fail": True})).status_code == 200
        committed = (await client.post("/orders/2")).json()["run"]
        assert [run.id for run in app.list_runs()] == [committed]
        assert_enqueued(app, "send-report", {"order": 2}, count=1)


@pytest.mark.postgres
async def test_a_route_on_a_sqlalchemy_async_session_carries_the_run(pg_clean: str):
    with psycopg.connect(pg_clean, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS orders")
        conn.execute("CREATE TABLE orders (id int)")
    app = with_handler(rota.App(pg_clean))
    engine = create_async_engine(pg_clean.replace("postgresql://", "postgresql+psycopg://"))
    api = FastAPI(lifespan=lifespan(app))

    @api.post("/orders/{order}")
    async def order(order: int, enqueue: Enqueue, fail: bool = False) -> dict[str, int]:
        async with AsyncSession(engine) as session:
            await session.execute(text("INSERT INTO orders VALUES (:id)"), {"id": order})
            run_id = await enqueue("send-report", {"order": order}, connection=session)
            await (session.rollback() if fail else session.commit())
        return {"run": run_id}

    try:
        async with serving(api) as client:
            await client.post("/orders/1", params={"fail": True})
            committed = (await client.post("/orders/2")).json()["run"]
            assert [run.id for run in app.list_runs()] == [committed]
    finally:
        await engine.dispose()
