"""The event routes: publish (events:write) makes one run per subscribed job however
often the event comes; bad input is a 4xx naming the value with nothing written;
listing is keyset-paged and namespaced."""

from __future__ import annotations

import httpx
import pytest

import rota
from rota.domain.events import MAX_EVENT_PAYLOAD_BYTES
from rota.domain.workflows import WorkflowInvalid
from rota.services import events

from .conftest import ADMIN, Token

EVENTS = "/api/v1/events"
SUBSCRIPTIONS = "/api/v1/events/subscriptions"


@pytest.fixture
def admin(auth: Token) -> dict[str, str]:
    """Every jobs scope, and events:write."""
    return auth(scopes=(*ADMIN, "events:write"))


ORDER = {"name": "order.created", "id": "order-1", "payload": {"region": "eu", "total": 3}}


async def _job_subscribed(
    client: httpx.AsyncClient, admin: dict[str, str], job: str = "receipts", **filters: object
) -> None:
    made = await client.post(
        "/api/v1/jobs", json={"name": job, "handler": "anything"}, headers=admin
    )
    assert made.status_code == 201, made.text
    body = {"event": "order.created", "job": job, "filter": filters}
    put = await client.put(SUBSCRIPTIONS, json=body, headers=admin)
    assert put.status_code == 200, put.text
    assert put.json()["filter"] == filters


async def _runs(client: httpx.AsyncClient, admin: dict[str, str]) -> list[dict[str, object]]:
    items: list[dict[str, object]] = (await client.get("/api/v1/runs", headers=admin)).json()[
        "items"
    ]
    return items


async def test_five_deliveries_of_one_event_make_one_run(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _job_subscribed(client, admin)
    answers = [await client.post(EVENTS, json=ORDER, headers=admin) for _ in range(5)]
    assert [a.status_code for a in answers] == [201, 200, 200, 200, 200]
    first = answers[0].json()
    assert first["created"]
    assert len(first["run_ids"]) == 1
    assert all(a.json()["run_ids"] == [] for a in answers[1:])
    [run] = await _runs(client, admin)
    assert run["id"] == first["run_ids"][0]
    assert run["handler"] == "anything"


async def test_a_filter_that_does_not_match_makes_no_run(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _job_subscribed(client, admin, region="us")
    answer = await client.post(EVENTS, json=ORDER, headers=admin)
    assert answer.status_code == 201
    assert answer.json()["run_ids"] == []
    assert answer.json()["event"]["runs_created"] == 0
    assert await _runs(client, admin) == []


async def test_bad_events_are_refused_naming_the_value_and_nothing_is_written(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _job_subscribed(client, admin)
    huge = {"name": "order.created", "payload": {"blob": "x" * MAX_EVENT_PAYLOAD_BYTES}}
    cases = [
        ({"payload": {}}, "name"),
        ({"name": "bad name!", "payload": {}}, "name"),
        ({**ORDER, "colour": "red"}, "colour"),
        ({**ORDER, "id": ""}, "id"),
        (huge, "payload size"),
    ]
    for body, named in cases:
        answer = await client.post(EVENTS, json=body, headers=admin)
        assert answer.status_code == 422, (body, answer.text)
        assert named in answer.text
    assert (await client.get(EVENTS, headers=admin)).json()["items"] == []
    assert await _runs(client, admin) == []


async def test_publishing_needs_events_write(client: httpx.AsyncClient, auth: Token) -> None:
    reader = auth(scopes=("jobs:read", "jobs:trigger"))
    refused = await client.post(EVENTS, json=ORDER, headers=reader)
    assert refused.status_code == 403
    assert "events:write" in refused.json()["detail"]
    allowed = await client.post(EVENTS, json=ORDER, headers=auth(scopes=("events:write",)))
    assert allowed.status_code == 201


async def test_events_are_listed_in_pages_within_the_callers_namespaces(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    for i in range(3):
        body = {**ORDER, "id": f"order-{i}"}
        assert (await client.post(EVENTS, json=body, headers=admin)).status_code == 201
    other = {**ORDER, "id": "elsewhere"}
    published = await client.post(f"{EVENTS}?namespace=team-b", json=other, headers=admin)
    assert published.status_code == 201
    page = (await client.get(f"{EVENTS}?namespace=default&limit=2", headers=admin)).json()
    assert [e["event_id"] for e in page["items"]] == ["order-2", "order-1"]
    rest = await client.get(EVENTS, params={"cursor": page["next_cursor"]}, headers=admin)
    assert [e["event_id"] for e in rest.json()["items"]] == ["order-0"]
    team_b = auth(scopes=("jobs:read", "events:write"), namespaces=("team-b",))
    seen = (await client.get(EVENTS, headers=team_b)).json()["items"]
    assert [e["event_id"] for e in seen] == ["elsewhere"]
    refused = await client.post(EVENTS, json={**ORDER, "id": "x"}, headers=team_b)
    assert refused.status_code == 422
    assert "namespace" in refused.text
    bad_cursor = await client.get(EVENTS, params={"cursor": "nonsense"}, headers=admin)
    assert bad_cursor.status_code == 400


async def test_subscriptions_are_listed_and_removed(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _job_subscribed(client, admin, region="eu")
    [listed] = (await client.get(SUBSCRIPTIONS, headers=admin)).json()["items"]
    assert (listed["event"], listed["job"], listed["filter"]) == (
        "order.created",
        "receipts",
        {"region": "eu"},
    )
    gone = await client.delete(
        SUBSCRIPTIONS, params={"event": "order.created", "job": "receipts"}, headers=admin
    )
    assert gone.status_code == 204
    assert (await client.get(SUBSCRIPTIONS, headers=admin)).json()["items"] == []
    missing = {"event": "order.created", "job": "nobody"}
    assert (await client.put(SUBSCRIPTIONS, json=missing, headers=admin)).status_code == 404
    bad_filter = {"event": "order.created", "job": "receipts", "filter": {"a..b": 1}}
    refused = await client.put(SUBSCRIPTIONS, json=bad_filter, headers=admin)
    assert refused.status_code == 422
    assert "a..b" in refused.text


async def test_a_subscription_names_one_known_target(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _job_subscribed(client, admin)
    unsaved = {"event": "order.created", "workflow": "not-saved"}
    answer = await client.put(SUBSCRIPTIONS, json=unsaved, headers=admin)
    assert answer.status_code == 404, answer.text
    assert "not-saved" in answer.text
    cases = [
        ({"event": "order.created"}, "exactly one of job and workflow"),
        ({"event": "order.created", "job": "receipts", "workflow": "w"}, "exactly one"),
    ]
    for body, named in cases:
        answer = await client.put(SUBSCRIPTIONS, json=body, headers=admin)
        assert answer.status_code == 422, (body, answer.text)
        assert named in answer.text
    listed = (await client.get(SUBSCRIPTIONS, headers=admin)).json()["items"]
    assert [(s["job"], s["workflow"]) for s in listed] == [("receipts", None)]


async def test_a_workflow_payload_is_never_checked_inside_the_publish(
    rota_app: rota.App, client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    """Issue 31: the publish checks subscribed workflows' payloads before its
    transaction (rota.services.events.checked_starts). A start that reaches the transaction
    unchecked (the workflow was saved in between) fails whole, nothing written."""
    template = {
        "name": "on-order",
        "steps": [{"name": "greet", "handler": "anything"}],
        "parameters": {"type": "object", "properties": {"total": {"type": "integer"}}},
    }
    assert (await client.post("/api/v1/workflows", json=template, headers=admin)).is_success
    body = {"event": "order.created", "workflow": "on-order"}
    assert (await client.put(SUBSCRIPTIONS, json=body, headers=admin)).is_success
    store = await rota_app.store()
    event = events.new_event("order.created", {"total": 3}, "o-1")
    with pytest.raises(WorkflowInvalid, match="publish it again"):
        await store.events.publish(event, None, rota_app.workflow_starts())
    assert (await client.get(EVENTS, headers=admin)).json()["items"] == []
    checked = await events.publish(store, rota_app.clock, event, rota_app.workflow_starts())
    assert len(checked.workflow_run_ids) == 1
