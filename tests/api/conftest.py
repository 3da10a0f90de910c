"""Fixtures for the HTTP API: an API over a fresh database of each kind, and tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel

import rota
from rota.api.auth import mint_token
from rota.api.settings import ApiSettings
from rota.asgi import create_api

SIGNING_KEY = "test-signing-key-0123456789abcdef-0123456789"
ADMIN = ("jobs:read", "jobs:trigger", "jobs:manage", "jobs:admin")


class Report(BaseModel):
    day: str
    recipients: list[str] = []


def make_rota_app(db_url: str) -> rota.App:
    app = rota.App(settings=rota.Settings(database_url=db_url, poll_seconds=0.05))

    @app.handler("report")
    async def report(ctx: rota.RunContext, payload: Report) -> None:
        return None

    @app.handler("export")
    def export(ctx: rota.RunContext, payload: list[int]) -> None:
        return None

    @app.handler("anything")
    async def anything(ctx: rota.RunContext, payload: Any) -> None:
        return None

    @app.handler("mapping")
    async def mapping(ctx: rota.RunContext, payload: dict[str, Any]) -> None:
        return None

    return app


def api_settings(**overrides: Any) -> ApiSettings:
    values: dict[str, Any] = {
        "env": "test",
        "signing_key": SIGNING_KEY,
        "rate_per_second": 1000.0,
        "rate_burst": 10_000,
    }
    values.update(overrides)
    return ApiSettings(**values)


@pytest.fixture
def rota_app(db_url: str) -> Iterator[rota.App]:
    app = make_rota_app(db_url)
    yield app
    app.close()


@pytest.fixture
def api(rota_app: rota.App) -> FastAPI:
    return create_api(rota_app, api_settings())


@asynccontextmanager
async def serving(api: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The API in this event loop (lifespan included), with a client talking to it."""
    async with api.router.lifespan_context(api):
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://rota.test") as client:
            yield client


@pytest.fixture
async def client(api: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(api) as client:
        yield client


Token = Callable[..., dict[str, str]]


@pytest.fixture
def auth() -> Token:
    """``auth(scopes=..., namespaces=...)`` -> Authorization headers for a fresh token."""

    def headers(
        scopes: tuple[str, ...] = ADMIN,
        namespaces: tuple[str, ...] = ("*",),
        subject: str = "tester",
        settings: ApiSettings | None = None,
    ) -> dict[str, str]:
        token = mint_token(
            settings or api_settings(),
            subject,
            datetime.now(UTC),
            scopes=scopes,
            namespaces=namespaces,
        )
        return {"Authorization": f"Bearer {token}"}

    return headers


@pytest.fixture
def admin(auth: Token) -> dict[str, str]:
    return auth()
