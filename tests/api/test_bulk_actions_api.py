"""Bulk actions over HTTP (issue 29): preview, confirm with the count, act; scopes;
one audit entry naming the filter and the count; bad input is a 4xx naming the value."""

from __future__ import annotations

from typing import Any

import httpx

from .conftest import Token

SECRET_VALUE = "s3cret-payload-value"
BULK = "/api/v1/runs/bulk"


async def _enqueue(client: httpx.AsyncClient, headers: dict[str, str], queue: str) -> int:
    body = {"handler": "anything", "payload": {"token": SECRET_VALUE}, "queue": queue}
    answer = await client.post("/api/v1/runs", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    return int(answer.json()["run_id"])


async def _states(client: httpx.AsyncClient, headers: dict[str, str], queue: str) -> list[str]:
    page = await client.get("/api/v1/runs", params={"queue": queue}, headers=headers)
    return sorted(run["state"] for run in page.json()["items"])


async def _count(client: httpx.AsyncClient, headers: dict[str, str], action: str, **f: Any) -> int:
    answer = await client.get(f"{BULK}/{action}/preview", params=f, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["action"] == action
    return int(answer.json()["count"])


async def test_preview_confirm_act_and_one_audit_entry(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    for _ in range(3):
        await _enqueue(client, admin, "mass")
    await _enqueue(client, admin, "other")
    assert await _count(client, admin, "cancel", queue="mass", state="pending") == 3
    stale = await client.post(
        f"{BULK}/cancel", params={"queue": "mass"}, json={"expected_count": 2}, headers=admin
    )
    assert stale.status_code == 409, stale.text
    assert stale.json()["type"].endswith("count-changed")
    assert "expected_count" in stale.json()["detail"]
    assert "3" in stale.json()["detail"]
    assert await _states(client, admin, "mass") == ["pending"] * 3
    done = await client.post(
        f"{BULK}/cancel", params={"queue": "mass"}, json={"expected_count": 3}, headers=admin
    )
    assert done.status_code == 200, done.text
    assert done.json() == {
        "action": "cancel",
        "matched": 3,
        "affected": 3,
        "skipped": 0,
        "batches": 1,
    }
    assert await _states(client, admin, "mass") == ["cancelled"] * 3
    assert await _states(client, admin, "other") == ["pending"]
    entries = (await client.get("/api/v1/audit?limit=200", headers=admin)).json()["items"]
    bulk = [e for e in entries if e["action"] == "act_on_runs_in_bulk"]
    assert [e["status"] for e in bulk] == [200, 409]  # newest first: one entry per call
    assert bulk[0]["target"] == "cancel runs where queue=mass; matched 3, affected 3, skipped 0"
    assert bulk[1]["target"] == "cancel runs where queue=mass; expected 2"
    assert SECRET_VALUE not in str(entries)


async def test_requeue_then_delete_which_needs_the_admin_scope(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    for _ in range(2):
        await _enqueue(client, admin, "old")
    cancelled = await client.post(
        f"{BULK}/cancel", params={"queue": "old"}, json={"expected_count": 2}, headers=admin
    )
    assert cancelled.json()["affected"] == 2
    assert await _count(client, admin, "requeue", queue="old") == 2
    requeued = await client.post(
        f"{BULK}/requeue", params={"queue": "old"}, json={"expected_count": 2}, headers=admin
    )
    assert requeued.json()["affected"] == 2
    assert await _states(client, admin, "old") == ["cancelled", "cancelled", "pending", "pending"]
    operator = auth(scopes=("jobs:read", "jobs:trigger"))
    confirm = {"expected_count": 2}
    refused = await client.post(
        f"{BULK}/delete", params={"queue": "old"}, json=confirm, headers=operator
    )
    assert refused.status_code == 403
    assert "jobs:admin" in refused.json()["detail"]
    assert await _count(client, operator, "delete", queue="old") == 2  # the preview is a read
    deleted = await client.post(
        f"{BULK}/delete", params={"queue": "old"}, json=confirm, headers=admin
    )
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["affected"] == 2
    assert await _states(client, admin, "old") == ["pending", "pending"]


async def test_a_reader_may_count_but_not_act(client: httpx.AsyncClient, auth: Token) -> None:
    viewer = auth(scopes=("jobs:read",))
    assert await _count(client, viewer, "cancel") == 0
    answer = await client.post(f"{BULK}/cancel", json={"expected_count": 0}, headers=viewer)
    assert answer.status_code == 403
    assert "jobs:trigger" in answer.json()["detail"]


async def test_bad_input_is_a_4xx_naming_the_value_and_what_is_allowed(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    confirm = {"expected_count": 0}
    unknown = await client.post(f"{BULK}/explode", json=confirm, headers=admin)
    assert unknown.status_code == 422, unknown.text
    assert "'explode'" in unknown.json()["detail"]
    assert "cancel, requeue, replay, delete" in unknown.json()["detail"]
    unknown = await client.get(f"{BULK}/explode/preview", headers=admin)
    assert unknown.status_code == 422
    wrong_state = await client.get(f"{BULK}/replay/preview?state=pending", headers=admin)
    assert wrong_state.status_code == 422, wrong_state.text
    assert "'pending'" in wrong_state.json()["detail"]
    assert "dead_lettered" in wrong_state.json()["detail"]
    not_a_state = await client.get(f"{BULK}/cancel/preview?state=sleepy", headers=admin)
    assert not_a_state.status_code == 422
    assert "state" in not_a_state.text  # the field and every state there is
    assert "dead_lettered" in not_a_state.text
    paged = await client.get(f"{BULK}/cancel/preview?limit=5", headers=admin)
    assert 400 <= paged.status_code < 500
    assert "limit" in paged.text
    for body in ({}, {"expected_count": -1}, {"expected_count": True}, {"expected": 1}):
        answer = await client.post(f"{BULK}/cancel", json=body, headers=admin)
        assert answer.status_code == 422, (body, answer.text)
    bad_time = await client.get(f"{BULK}/cancel/preview?created_after=yesterday", headers=admin)
    assert bad_time.status_code == 422
    assert "created_after" in bad_time.text


async def test_owner_label_and_priority_narrow_a_bulk_action_as_they_do_the_listing(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    async def enqueue(**body: Any) -> int:
        answer = await client.post(
            "/api/v1/runs", json={"handler": "anything", "queue": "meta", **body}, headers=admin
        )
        assert answer.status_code == 201, answer.text
        return int(answer.json()["run_id"])

    acme = await enqueue(owner="billing", labels={"customer": "acme", "env": "prod"})
    acme_test = await enqueue(owner="data", labels={"customer": "acme", "env": "test"})
    billing = await enqueue(owner="billing", priority=3)
    await enqueue(owner="data")

    async def cancel(query: dict[str, Any]) -> set[int]:
        """Cancel what the query matches; the ids it touched, by the listing's view."""
        count = await _count(client, admin, "cancel", queue="meta", **query)
        confirm = {"expected_count": count}
        params = {"queue": "meta", **query}
        done = await client.post(f"{BULK}/cancel", params=params, json=confirm, headers=admin)
        assert done.status_code == 200, done.text
        assert done.json()["affected"] == count
        listed = await client.get(
            "/api/v1/runs", params={"queue": "meta", "state": "cancelled"}, headers=admin
        )
        return {run["id"] for run in listed.json()["items"]}

    # Two labels: both must match, as in the listing.
    assert await cancel({"label": ["customer=acme", "env=prod"]}) == {acme}
    assert await cancel({"label": "customer=acme"}) == {acme, acme_test}
    assert await cancel({"owner": "billing", "priority": 3}) == {acme, acme_test, billing}
    pending = await client.get(
        "/api/v1/runs", params={"queue": "meta", "state": "pending"}, headers=admin
    )
    assert [run["owner"] for run in pending.json()["items"]] == ["data"]
    entries = (await client.get("/api/v1/audit?limit=50", headers=admin)).json()["items"]
    targets = [e["target"] for e in entries if e["action"] == "act_on_runs_in_bulk"]
    assert targets[-1].startswith("cancel runs where queue=meta label=customer=acme,env=prod;")
    assert targets[0].startswith("cancel runs where queue=meta owner=billing priority=3;")


async def test_bad_owner_label_or_priority_in_a_bulk_filter_is_a_422_naming_it(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    for query, named, rule in (
        ("label=env", "'env'", "key=value"),
        ("label=Env=x", "'Env'", "lowercase letters"),
        ("owner=has%20space", "has space", "1-64 characters"),
        ("priority=11", "priority", "10"),
    ):
        preview = await client.get(f"{BULK}/cancel/preview?{query}", headers=admin)
        assert preview.status_code == 422, (query, preview.text)
        assert named in preview.text
        assert rule in preview.text
        act = await client.post(f"{BULK}/cancel?{query}", json={"expected_count": 0}, headers=admin)
        assert act.status_code == 422, (query, act.text)
