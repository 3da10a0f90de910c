from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

import rota
from rota.engine.worker import Worker


@pytest.fixture
def clock() -> rota.FakeClock:
    return rota.FakeClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
async def make_app(db_url: str) -> AsyncIterator[Callable[..., rota.App]]:
    """Apps on this test's database with fast test settings, closed after the test."""
    made: list[rota.App] = []

    def make(clock: rota.Clock | None = None, **overrides: Any) -> rota.App:
        settings = rota.Settings(
            database_url=db_url,
            poll_seconds=overrides.pop("poll_seconds", 0.02),
            sqlite_poll_seconds=overrides.pop("sqlite_poll_seconds", 0.02),
            lease_seconds=overrides.pop("lease_seconds", 30.0),
            cancel_grace_seconds=overrides.pop("cancel_grace_seconds", 0.2),
            shutdown_grace_seconds=overrides.pop("shutdown_grace_seconds", 5.0),
            reap_interval_seconds=0.1,
            **overrides,
        )
        app = rota.App(settings=settings, clock=clock)
        made.append(app)
        return app

    yield make
    for app in made:
        await app.aclose()


@asynccontextmanager
async def working(app: rota.App, concurrency: int = 4, node_id: str = "w1") -> AsyncIterator[Any]:
    """Run a worker on this loop for the duration of the block; stop it gracefully."""
    stop = asyncio.Event()
    task: asyncio.Task[Worker] = asyncio.create_task(
        app.work(stop, app.worker_options(concurrency=concurrency, node_id=node_id))
    )
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=30)


def with_side_effects_table(url: str) -> str:
    """``url``'s database with an empty ``side_effects`` table, where handlers write
    through ``ctx.transaction()`` (PostgreSQL)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS side_effects")
        conn.execute("CREATE TABLE side_effects (run_id bigint, fence bigint)")
    return url


def side_effects(url: str) -> list[tuple[int, int]]:
    """What the handlers wrote, as (run id, fence) in fence order."""
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT run_id, fence FROM side_effects ORDER BY fence").fetchall()
