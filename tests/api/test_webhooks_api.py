"""The webhook routes: the secret shown once, refusals as 422s naming the value,
namespaces isolating subscriptions, delivery history and redelivery."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

import rota
from rota.asgi import create_api
from rota.domain.runs import NewRun
from rota.store.port import Store
from rota.store.sql_store import SqlStore
from rota.store.webhook_port import WebhookStore
from tests.webhooks.support import finish_runs

from .conftest import Token, api_settings, serving

SUBSCRIPTION = {"url": "http://127.0.0.1:9/hooks", "event_types": ["run.succeeded"]}


@pytest.fixture
async def private_ok(db_url: str) -> AsyncIterator[tuple[rota.App, httpx.AsyncClient]]:
    """An API whose operator allows private receivers (as the tests' local ones are)."""
    app = rota.App(
        settings=rota.Settings(database_url=db_url, webhook_allow_private_addresses=True)
    )
    try:
        async with serving(create_api(app, api_settings())) as client:
            yield app, client
    finally:
        app.close()


async def test_a_refused_address_is_a_422_naming_the_url(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    response = await client.post("/api/v1/webhooks", json=SUBSCRIPTION, headers=admin)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert "http://127.0.0.1:9/hooks" in problem["detail"]
    [error] = problem["errors"]
    assert error["field"] == "url"
    assert "private" in error["message"]
    assert (await client.get("/api/v1/webhooks", headers=admin)).json()["items"] == []


async def test_an_unknown_event_type_is_a_422(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    body = {**SUBSCRIPTION, "event_types": ["run.exploded"]}
    response = await client.post("/api/v1/webhooks", json=body, headers=admin)
    assert response.status_code == 422
    assert "event_types" in response.text


async def test_the_secret_is_shown_once_and_subscriptions_are_managed(
    private_ok: tuple[rota.App, httpx.AsyncClient], auth: Token
) -> None:
    _app, client = private_ok
    admin = auth()
    created = await client.post("/api/v1/webhooks", json=SUBSCRIPTION, headers=admin)
    assert created.status_code == 201, created.text
    secret = created.json()["secret"]
    assert secret.startswith("whsec_")
    sub_id = created.json()["id"]
    for response in (
        await client.get("/api/v1/webhooks", headers=admin),
        await client.get(f"/api/v1/webhooks/{sub_id}", headers=admin),
        await client.patch(f"/api/v1/webhooks/{sub_id}", json={"enabled": False}, headers=admin),
        await client.get("/api/v1/audit", headers=admin),
    ):
        assert response.status_code == 200, response.text
        assert secret not in response.text
        assert "whsec_" not in response.text
    assert (await client.get(f"/api/v1/webhooks/{sub_id}", headers=admin)).json()[
        "disabled_reason"
    ] == "disabled by an operator"
    rotated = await client.post(f"/api/v1/webhooks/{sub_id}/rotate-secret", headers=admin)
    assert rotated.json()["secret"] != secret
    assert rotated.json()["rotating"] is True
    # Another namespace's admin sees nothing of it.
    other = auth(namespaces=("team-b",))
    assert (await client.get("/api/v1/webhooks", headers=other)).json()["items"] == []
    assert (await client.get(f"/api/v1/webhooks/{sub_id}", headers=other)).status_code == 404
    assert (await client.delete(f"/api/v1/webhooks/{sub_id}", headers=other)).status_code == 404
    # Not an admin: forbidden.
    reader = auth(scopes=("jobs:read",))
    assert (await client.get("/api/v1/webhooks", headers=reader)).status_code == 403
    assert (await client.delete(f"/api/v1/webhooks/{sub_id}", headers=admin)).status_code == 204
    assert (await client.get(f"/api/v1/webhooks/{sub_id}", headers=admin)).status_code == 404


async def test_delivery_history_and_redelivery(
    private_ok: tuple[rota.App, httpx.AsyncClient], auth: Token
) -> None:
    app, client = private_ok
    admin = auth()
    sub_id = (await client.post("/api/v1/webhooks", json=SUBSCRIPTION, headers=admin)).json()["id"]
    store = await app.store()
    [run_id] = await finish_runs(store, 1, None)
    page = (await client.get(f"/api/v1/webhooks/{sub_id}/deliveries", headers=admin)).json()
    [delivery] = page["items"]
    assert (delivery["run_id"], delivery["state"]) == (run_id, "pending")
    assert delivery["webhook_id"] == f"msg_{delivery['id']}"
    again = await client.post(
        f"/api/v1/webhooks/deliveries/{delivery['id']}/redeliver", headers=admin
    )
    assert again.status_code == 202, again.text
    assert again.json()["webhook_id"] == delivery["webhook_id"]
    other = auth(namespaces=("team-b",))
    redeliver_other = f"/api/v1/webhooks/deliveries/{delivery['id']}/redeliver"
    assert (await client.post(redeliver_other, headers=other)).status_code == 404


async def test_every_outcome_can_be_subscribed_to_and_a_cancel_is_delivered(
    private_ok: tuple[rota.App, httpx.AsyncClient], auth: Token
) -> None:
    """The new outcome events are accepted (the schema's list is EventType's), stored as
    asked, and a cancel through the API enters the outbox as run.cancelled: the run's
    columns, never its payload."""
    app, client = private_ok
    admin = auth()
    outcomes = ["run.cancelled", "run.retrying", "run.timed_out", "run.skipped"]
    body = {**SUBSCRIPTION, "event_types": outcomes}
    created = await client.post("/api/v1/webhooks", json=body, headers=admin)
    assert created.status_code == 201, created.text
    assert created.json()["event_types"] == sorted(outcomes)
    sub_id = created.json()["id"]
    store = await app.store()
    [enqueued] = await store.enqueue(
        [NewRun(handler="job", payload_json='{"card": "4111-secret"}')], None
    )
    cancelled = await client.post(f"/api/v1/runs/{enqueued.run_id}/cancel", headers=admin)
    assert cancelled.status_code == 200, cancelled.text
    page = await client.get(f"/api/v1/webhooks/{sub_id}/deliveries", headers=admin)
    [delivery] = page.json()["items"]
    assert (delivery["event_type"], delivery["run_id"]) == ("run.cancelled", enqueued.run_id)
    assert "4111-secret" not in page.text
    [stored] = await hooks_of(store).list_deliveries(sub_id, None, 10)
    assert json.loads(stored.body())["data"] == {
        "run_id": enqueued.run_id,
        "namespace": "default",
        "handler": "job",
        "queue": "default",
        "state": "cancelled",
        "attempt": 0,
    }


def hooks_of(store: Store) -> WebhookStore:
    assert isinstance(store, SqlStore)
    return store
