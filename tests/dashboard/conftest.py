"""Fixtures for the dashboard: the server's app over a fresh database of each kind, and
signing in through the real sign-in form."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import rota
from rota.api.auth import mint_token
from rota.asgi import create_api
from tests.api.conftest import ADMIN, api_settings, make_rota_app, serving

VIEWER = ("jobs:read",)
OPERATOR = ("jobs:read", "jobs:trigger", "jobs:manage")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def token(
    scopes: tuple[str, ...] = ADMIN, namespaces: tuple[str, ...] = ("*",), subject: str = "ana"
) -> str:
    return mint_token(
        api_settings(), subject, datetime.now(UTC), scopes=scopes, namespaces=namespaces
    )


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


async def sign_in(client: httpx.AsyncClient, credential: str) -> httpx.Response:
    """Through the sign-in form, as a browser would (its double-submit token too)."""
    form = await client.get("/signin")
    signin_token = re.search(r'name="signin_token" value="([^"]+)"', form.text)
    assert signin_token is not None, form.text
    return await client.post(
        "/signin",
        data={"credential": credential, "signin_token": signin_token.group(1), "next": "/"},
    )


def csrf_of(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    assert found is not None, page.text[:500]
    return found.group(1)


@pytest.fixture
def rota_app(db_url: str) -> Iterator[rota.App]:
    app = make_rota_app(db_url)
    yield app
    app.close()


@pytest.fixture
def api(rota_app: rota.App) -> FastAPI:
    return create_api(rota_app, api_settings())


@pytest.fixture
async def client(api: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(api) as client:
        yield client


SignedIn = Callable[..., Any]


@pytest.fixture
def signed_in(client: httpx.AsyncClient) -> SignedIn:
    """``await signed_in(scopes, namespaces)``: the client, signed in with a token."""

    async def signing(
        scopes: tuple[str, ...] = ADMIN, namespaces: tuple[str, ...] = ("*",)
    ) -> httpx.AsyncClient:
        answer = await sign_in(client, token(scopes, namespaces))
        assert answer.status_code == 303, answer.text
        return client

    return signing
