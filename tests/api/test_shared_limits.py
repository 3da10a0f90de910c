"""The API's limits held in the database (ADR 0036): two API apps over one database
share one request limit and one failed-authentication budget, and when the database
cannot answer, each process's own limiter decides (never unlimited, never a 429 for
all). The housekeeper prunes ended windows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI

from rota.api.auth import mint_token
from rota.api.shared_limits import SharedLimits
from rota.asgi import create_api
from rota.clock import FakeClock
from rota.config import Settings
from rota.engine.housekeeping import Housekeeper
from rota.errors import StoreUnavailable
from rota.store.port import Store

from .conftest import ADMIN, api_settings, make_rota_app

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


def token(subject: str) -> dict[str, str]:
    return bearer(mint_token(api_settings(), subject, datetime.now(UTC), scopes=ADMIN))


@asynccontextmanager
async def apps(
    db_url: str, count: int, clock: FakeClock, **settings: object
) -> AsyncIterator[list[httpx.AsyncClient]]:
    """``count`` API apps, each with its own rota.App (its own store and connections),
    over one database: as ``count`` server processes would be."""
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            app = make_rota_app(db_url)
            app.clock = clock
            stack.callback(app.close)
            api: FastAPI = create_api(app, api_settings(**settings))
            await stack.enter_async_context(api.router.lifespan_context(api))
            transport = httpx.ASGITransport(app=api, client=("192.0.2.9", 40000))
            client = httpx.AsyncClient(transport=transport, base_url="http://rota.test")
            clients.append(await stack.enter_async_context(client))
        yield clients


async def test_two_apps_share_one_request_limit(db_url: str) -> None:
    clock = FakeClock(NOW)
    # 4 requests per 400 s window (0.01 per second on average)
    async with apps(db_url, 2, clock, rate_per_second=0.01, rate_burst=4) as (one, two):
        alice = token("alice")
        statuses = [
            (await client.get("/api/v1/jobs", headers=alice)).status_code
            for client in (one, two, one, two, one, two)
        ]
        assert statuses == [200, 200, 200, 200, 429, 429]
        refused = await two.get("/api/v1/jobs", headers=alice)
        assert refused.headers["Retry-After"] == "400"
        assert refused.json()["detail"] == "too many requests; retry in 400 s"
        assert (await one.get("/api/v1/jobs", headers=token("bob"))).status_code == 200
        clock.advance(399)
        assert (await one.get("/api/v1/jobs", headers=alice)).headers["Retry-After"] == "1"
        clock.advance(1)
        assert (await two.get("/api/v1/jobs", headers=alice)).status_code == 200


async def test_two_apps_share_one_failed_auth_budget(db_url: str) -> None:
    clock = FakeClock(NOW)
    async with apps(db_url, 2, clock, failed_auth_burst=3) as (one, two):
        bad = bearer("not-a-token")
        statuses = [
            (await client.get("/api/v1/jobs", headers=bad)).status_code
            for client in (one, two, one)
        ]
        assert statuses == [401, 401, 401]
        right = await two.get("/api/v1/jobs", headers=token("alice"))
        assert right.status_code == 429
        assert right.headers["Retry-After"] == "300"


class _Down:
    """A rota.App whose database cannot be reached."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    async def store(self) -> Store:
        raise StoreUnavailable("the database is down (a test)")


async def test_without_the_database_this_process_limits_decide() -> None:
    clock = FakeClock(NOW)
    settings = api_settings(rate_per_second=0.01, rate_burst=2, failed_auth_burst=2)
    limits = SharedLimits(_Down(clock), settings)  # type: ignore[arg-type]
    assert [await limits.take("jwt:alice") for _ in range(2)] == [None, None]
    assert await limits.take("jwt:alice") == pytest.approx(100.0)  # the local bucket's
    assert await limits.take("jwt:bob") is None
    keys = ["source:192.0.2.1"]
    assert await limits.blocked(keys) is None
    await limits.fail(keys)
    await limits.fail(keys)
    assert await limits.blocked(keys) == pytest.approx(300.0)


async def test_failures_counted_while_the_database_answers_are_known_locally(
    db_url: str,
) -> None:
    """fail() counts in this process too: if the database goes, a guesser who spent
    the budget is still blocked here."""
    app = make_rota_app(db_url)
    clock = FakeClock(NOW)
    app.clock = clock
    try:
        limits = SharedLimits(app, api_settings(failed_auth_burst=2))
        keys = ["source:192.0.2.1"]
        await limits.fail(keys)
        await limits.fail(keys)
        assert await limits.blocked(keys) == pytest.approx(300.0)
        assert limits.local_failures.blocked(keys[0]) == pytest.approx(300.0)
    finally:
        await app.aclose()
        app.close()


async def test_housekeeping_prunes_ended_windows(store: Store, db_url: str) -> None:
    clock = FakeClock(NOW)
    limits = store.api_limits
    await limits.spend_api_window("rate:jwt:alice", 60.0, NOW)
    await limits.spend_api_window("rate:jwt:bob", 600.0, NOW)
    clock.advance(60)
    await Housekeeper(store, Settings(database_url=db_url), clock).prune_once()
    assert await limits.full_api_windows(["rate:jwt:alice"], 1, clock.now()) is None
    assert await limits.full_api_windows(["rate:jwt:bob"], 1, clock.now()) == 540.0
    assert await limits.prune_api_windows(clock.now(), 10) == 0  # alice's was pruned
