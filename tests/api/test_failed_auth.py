"""The failed-authentication budget: per source address and per credential id, and once
spent it blocks for the rest of its window — a correct credential included — so
guessing cannot be interleaved with a real login. Forwarded headers do not reset it
unless they come from a configured proxy."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from rota.api.auth import mint_token
from rota.api.ratelimit import FailureBudget
from rota.asgi import create_api
from rota.clock import FakeClock

from ..helpers import stop_gracefully
from .conftest import ADMIN, api_settings, make_rota_app
from .test_cli_e2e import free_port, start_server, wait_ready

BAD = {"Authorization": "Bearer not-a-token"}


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


def test_the_budget_blocks_for_the_window() -> None:
    clock = FakeClock()
    budget = FailureBudget(3, 300.0, clock.monotonic)
    for _ in range(3):
        assert budget.blocked("k") is None
        budget.fail("k")
    assert budget.blocked("k") == 300.0
    assert budget.blocked("other") is None
    clock.advance(299)
    assert budget.blocked("k") == 1.0
    clock.advance(1)
    assert budget.blocked("k") is None


@asynccontextmanager
async def api_from(db_url: str, **settings: Any) -> AsyncIterator[tuple[FastAPI, FakeClock]]:
    clock = FakeClock()
    app = make_rota_app(db_url)
    app.clock = clock
    api = create_api(app, api_settings(failed_auth_window_seconds=300.0, **settings))
    try:
        async with api.router.lifespan_context(api):
            yield api, clock
    finally:
        app.close()


def client_from(api: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=api, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://rota.test")


def admin_token(subject: str = "tester") -> str:
    return mint_token(api_settings(), subject, datetime.now(UTC), scopes=ADMIN)


async def test_a_spent_budget_refuses_even_the_right_credential(db_url: str) -> None:
    async with api_from(db_url, failed_auth_burst=3) as (api, clock):
        async with client_from(api, "192.0.2.1") as client:
            statuses = [
                (await client.get("/api/v1/jobs", headers=BAD)).status_code for _ in range(3)
            ]
            assert statuses == [401, 401, 401]
            right = await client.get("/api/v1/jobs", headers=bearer(admin_token()))
            assert right.status_code == 429
            assert right.headers["Retry-After"] == "300"
            assert right.headers["content-type"] == "application/problem+json"
            clock.advance(301)
            again = await client.get("/api/v1/jobs", headers=bearer(admin_token()))
            assert again.status_code == 200
        async with client_from(api, "192.0.2.2") as elsewhere:
            # Another address has its own budget.
            assert (await elsewhere.get("/api/v1/jobs", headers=BAD)).status_code == 401


async def test_guesses_at_one_credential_block_it_from_every_address(db_url: str) -> None:
    async with api_from(db_url, failed_auth_burst=3) as (api, clock):
        async with client_from(api, "192.0.2.9") as client:
            made = await client.post(
                "/api/v1/api-keys",
                json={"name": "ci", "scopes": ["jobs:read"], "namespaces": ["*"]},
                headers=bearer(admin_token()),
            )
            key = made.json()["key"]
        key_id, wrong = key[: len("rota_") + 16], "A" * 43  # the secret may hold "_"
        for n in range(3):  # three addresses, one guess each, all at the same key
            async with client_from(api, f"198.51.100.{n}") as guesser:
                answer = await guesser.get("/api/v1/jobs", headers=bearer(f"{key_id}_{wrong}"))
                assert answer.status_code == 401
        async with client_from(api, "203.0.113.7") as owner:
            assert (await owner.get("/api/v1/jobs", headers=bearer(key))).status_code == 429
            # The address itself is not blocked: another credential works from it.
            assert (
                await owner.get("/api/v1/jobs", headers=bearer(admin_token()))
            ).status_code == 200
            # Forged tokens claiming one subject block that subject the same way.
            forged = mint_token(
                api_settings(signing_key="another-key-0123456789abcdefghijklmnop"),
                "alice",
                datetime.now(UTC),
                scopes=ADMIN,
            )
        for n in range(3):
            async with client_from(api, f"198.51.100.{10 + n}") as guesser:
                assert (
                    await guesser.get("/api/v1/jobs", headers=bearer(forged))
                ).status_code == 401
        async with client_from(api, "203.0.113.8") as alice:
            real = bearer(admin_token("alice"))
            assert (await alice.get("/api/v1/jobs", headers=real)).status_code == 429
            clock.advance(300)
            assert (await alice.get("/api/v1/jobs", headers=real)).status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("trusted", [False, True], ids=["no proxy", "trusted proxy"])
def test_forwarded_for_gives_no_fresh_budget_unless_from_a_trusted_proxy(
    tmp_path: Path, trusted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROTA_FAILED_AUTH_BURST", "3")
    if trusted:
        monkeypatch.setenv("ROTA_TRUSTED_PROXIES", "127.0.0.1")
    else:
        monkeypatch.delenv("ROTA_TRUSTED_PROXIES", raising=False)
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)  # uvicorn's own knob
    port = free_port()
    log = tmp_path / "server.log"
    proc = start_server(tmp_path / "rota.db", port, log, "--no-worker", "--no-leader")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log)
        statuses = [
            httpx.get(
                f"{url}/api/v1/jobs", headers={**BAD, "X-Forwarded-For": f"10.0.0.{n}"}, timeout=10
            ).status_code
            for n in range(6)
        ]
    finally:
        stop_gracefully(proc)
    if trusted:
        assert statuses == [401] * 6, "each forwarded address is a client of its own"
    else:
        assert statuses == [401, 401, 401, 429, 429, 429], log.read_text()[-2000:]
    assert os.environ.get("ROTA_FAILED_AUTH_BURST") == "3"
