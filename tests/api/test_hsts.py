"""HSTS only where it means something: a response that went out over TLS (served so,
or https at a trusted proxy). Over plain HTTP it promises HTTPS that is not there."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.api.conftest import serving


async def test_no_hsts_over_plain_http(client: httpx.AsyncClient) -> None:
    response = await client.get("/health/live")
    assert response.status_code == 200
    assert "strict-transport-security" not in response.headers
    assert response.headers["x-content-type-options"] == "nosniff"  # the rest still sent


async def test_hsts_over_https(api: FastAPI) -> None:
    async with serving(api) as client:
        response = await client.get("https://rota.test/health/live")
    assert response.headers["strict-transport-security"].startswith("max-age=63072000")
