"""`rota server --no-worker`: the server stands for leader without working runs, and
gives the leadership up when it shuts down (so another node need not wait out a lease)."""

from __future__ import annotations

import httpx
import pytest

import rota
from rota.asgi import create_api
from tests.api.conftest import api_settings, serving
from tests.helpers import eventually

pytestmark = pytest.mark.timeout(60)


async def test_a_server_without_a_worker_leads_and_resigns_on_shutdown(
    rota_app: rota.App, admin: dict[str, str]
) -> None:
    api = create_api(
        rota_app, api_settings(embedded_worker=False, embedded_leader=True, node_id="api-1")
    )

    async def holder(client: httpx.AsyncClient) -> str | None:
        body = (await client.get("/api/v1/leader", headers=admin)).json()
        return body["leader"] and body["leader"]["holder"]

    async with serving(api) as client:
        assert await eventually(lambda: holder(client), 20, "the server to lead") == "api-1"

    # Released, not left to expire: another node takes over at once, with the next term.
    store = await rota_app.store()
    assert await store.acquire_leadership("api-2", None, 10.0, None) == 2
