"""POST /api/v1/runs: a service that is not written in Python starts background work."""

from __future__ import annotations

import httpx

from .conftest import Token


async def test_enqueue_creates_a_run_with_the_handlers_defaults_and_the_options_given(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    answer = await client.post(
        "/api/v1/runs",
        json={"handler": "export", "payload": [1, 2], "priority": 2, "tags": ["gpu"]},
        headers=admin,
    )
    assert answer.status_code == 201, answer.text
    run_id = answer.json()["run_id"]
    run = (await client.get(f"/api/v1/runs/{run_id}", headers=admin)).json()["run"]
    assert (run["handler"], run["payload"], run["priority"], run["tags"]) == (
        "export",
        [1, 2],
        2,
        ["gpu"],
    )
    assert (run["namespace"], run["queue"], run["state"]) == ("default", "default", "pending")


async def test_enqueue_is_idempotent_per_key_and_lands_in_the_namespace_asked(
    client: httpx.AsyncClient, auth: Token
) -> None:
    team = auth(namespaces=("team-a",))
    body = {"handler": "report", "payload": {"day": "mon"}}
    headers = {**team, "Idempotency-Key": "export-42"}
    first = await client.post("/api/v1/runs?namespace=team-a", json=body, headers=headers)
    second = await client.post("/api/v1/runs?namespace=team-a", json=body, headers=headers)
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    run = (await client.get(f"/api/v1/runs/{first.json()['run_id']}", headers=team)).json()
    assert run["run"]["namespace"] == "team-a"
    assert run["run"]["idempotency_key"] == "export-42"

    elsewhere = await client.post("/api/v1/runs?namespace=team-b", json=body, headers=team)
    assert elsewhere.status_code == 422
    assert "namespace" in elsewhere.json()["detail"]


async def test_enqueue_refuses_bad_input_naming_the_field(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    unknown = await client.post("/api/v1/runs", json={"handler": "nope"}, headers=admin)
    assert unknown.status_code == 422
    assert "handler" in unknown.json()["detail"]

    wrong_type = await client.post(
        "/api/v1/runs", json={"handler": "report", "payload": {"day": 3}}, headers=admin
    )
    assert wrong_type.status_code == 422
    assert "payload.day" in wrong_type.text

    typo = await client.post("/api/v1/runs", json={"handler": "export", "prio": 1}, headers=admin)
    assert typo.status_code == 422

    limitless = await client.post(
        "/api/v1/runs", json={"handler": "export", "payload": [1], "key_limit": 2}, headers=admin
    )
    assert limitless.status_code == 422
    assert "key_limit" in limitless.json()["detail"]

    viewer = await client.post(
        "/api/v1/runs", json={"handler": "export"}, headers=auth(scopes=("jobs:read",))
    )
    assert viewer.status_code == 403
