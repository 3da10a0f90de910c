"""A run's and a job's owner and labels over the API (issue 29): set at enqueue and on
jobs, shown, filtered on (with priority), and bad values refused as a 422 problem that
names the value and the rule."""

from __future__ import annotations

from typing import Any

import httpx
import pytest


async def _enqueue(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> int:
    body = {"handler": "anything", **body}
    answer = await client.post("/api/v1/runs", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    return int(answer.json()["run_id"])


async def _ids(client: httpx.AsyncClient, headers: dict[str, str], query: str) -> list[int]:
    answer = await client.get(f"/api/v1/runs?{query}", headers=headers)
    assert answer.status_code == 200, answer.text
    return [run["id"] for run in answer.json()["items"]]


async def test_owner_and_labels_are_shown_and_filtered_on(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    both = await _enqueue(
        client, admin, owner="billing", labels={"env": "prod", "customer": "acme"}
    )
    prod = await _enqueue(client, admin, owner="data", labels={"env": "prod"}, priority=2)
    bare = await _enqueue(client, admin, priority=2)
    run = (await client.get(f"/api/v1/runs/{both}", headers=admin)).json()["run"]
    assert (run["owner"], run["labels"]) == ("billing", {"customer": "acme", "env": "prod"})
    plain = (await client.get(f"/api/v1/runs/{bare}", headers=admin)).json()["run"]
    assert (plain["owner"], plain["labels"]) == (None, {})

    assert await _ids(client, admin, "owner=billing") == [both]
    assert await _ids(client, admin, "label=env=prod") == [prod, both]
    assert await _ids(client, admin, "label=env=prod&label=customer=acme") == [both]
    assert await _ids(client, admin, "priority=2") == [bare, prod]
    assert await _ids(client, admin, "priority=2&label=env=prod") == [prod]
    # A value may itself hold '=': the first one splits key from value.
    odd = await _enqueue(client, admin, labels={"q": "a=b"})
    assert await _ids(client, admin, "label=q=a%3Db") == [odd]


@pytest.mark.parametrize(
    ("body", "named", "rule"),
    [
        ({"labels": {"Bad Key": "v"}}, "Bad Key", "lowercase letters"),
        ({"labels": {f"k{i}": "v" for i in range(21)}}, "21 labels", "at most 20 labels"),
        ({"labels": {"k": "v" * 201}}, "label 'k'", "0-200 characters"),
        ({"owner": "o" * 65}, "owner", "1-64 characters"),
        ({"owner": "has space"}, "has space", "1-64 characters"),
    ],
)
async def test_bad_owner_or_labels_are_a_422_naming_the_value_and_the_rule(
    client: httpx.AsyncClient, admin: dict[str, str], body: dict[str, Any], named: str, rule: str
) -> None:
    answer = await client.post("/api/v1/runs", json={"handler": "anything", **body}, headers=admin)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert named in answer.text
    assert rule in answer.text


@pytest.mark.parametrize(
    ("query", "named", "rule"),
    [
        ("label=env", "'env'", "key=value"),
        ("label=Env=x", "'Env'", "lowercase letters"),
        ("owner=has%20space", "has space", "1-64 characters"),
        ("priority=11", "priority", "10"),
    ],
)
async def test_bad_filters_are_a_422_naming_the_value_and_the_rule(
    client: httpx.AsyncClient, admin: dict[str, str], query: str, named: str, rule: str
) -> None:
    answer = await client.get(f"/api/v1/runs?{query}", headers=admin)
    assert answer.status_code == 422, answer.text
    assert named in answer.text
    assert rule in answer.text


async def test_a_jobs_runs_inherit_its_owner_and_labels(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    job = {"name": "sync", "handler": "anything", "owner": "ops", "labels": {"env": "prod"}}
    created = await client.post("/api/v1/jobs", json=job, headers=admin)
    assert created.status_code == 201, created.text
    assert (created.json()["owner"], created.json()["labels"]) == ("ops", {"env": "prod"})
    triggered = await client.post("/api/v1/jobs/sync/trigger", headers=admin)
    assert triggered.status_code == 202, triggered.text
    run = (await client.get(f"/api/v1/runs/{triggered.json()['run_id']}", headers=admin)).json()
    assert (run["run"]["owner"], run["run"]["labels"]) == ("ops", {"env": "prod"})

    changed = await client.patch(
        "/api/v1/jobs/sync", json={"owner": None, "labels": {"env": "dev"}}, headers=admin
    )
    assert changed.status_code == 200, changed.text
    assert (changed.json()["owner"], changed.json()["labels"]) == (None, {"env": "dev"})
    bad = await client.patch("/api/v1/jobs/sync", json={"labels": {"": "x"}}, headers=admin)
    assert bad.status_code == 422
    assert "label key" in bad.text


async def test_jobs_are_listed_by_owner_and_labels(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    for name, owner, labels in (
        ("a-sync", "ops", {"env": "prod", "tier": "1"}),
        ("b-sync", "ops", {"env": "dev"}),
        ("c-sync", "data", {"env": "prod"}),
        ("d-sync", None, {}),
    ):
        job = {"name": name, "handler": "anything", "owner": owner, "labels": labels}
        created = await client.post("/api/v1/jobs", json=job, headers=admin)
        assert created.status_code == 201, created.text

    async def names(query: str) -> list[str]:
        answer = await client.get(f"/api/v1/jobs?{query}", headers=admin)
        assert answer.status_code == 200, answer.text
        return [job["name"] for job in answer.json()["items"]]

    assert await names("owner=ops") == ["a-sync", "b-sync"]
    assert await names("label=env=prod") == ["a-sync", "c-sync"]
    assert await names("label=env=prod&label=tier=1") == ["a-sync"]
    assert await names("owner=data&label=env=dev") == []
    assert await names("") == ["a-sync", "b-sync", "c-sync", "d-sync"]
    # Cleared with a PATCH (owner null, labels {}), a job leaves both filters.
    cleared = await client.patch(
        "/api/v1/jobs/b-sync", json={"owner": None, "labels": {}}, headers=admin
    )
    assert (cleared.json()["owner"], cleared.json()["labels"]) == (None, {})
    assert await names("owner=ops") == ["a-sync"]
    for query, named, rule in (
        ("label=env", "'env'", "key=value"),
        ("owner=has%20space", "has space", "1-64 characters"),
        ("owners=ops", "query.owners", "not a parameter of this operation"),
    ):
        answer = await client.get(f"/api/v1/jobs?{query}", headers=admin)
        assert answer.status_code == 422, answer.text
        assert named in answer.text
        assert rule in answer.text
