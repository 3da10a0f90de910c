"""The audit log is complete (a 500 is recorded too), namespaced (refused and requeued
calls land where the namespace's admins see them), bounded and free of payload values,
and flood-proof (throttled calls and failed authentications are sampled per window)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

import rota
from rota.api.audit import MAX_DETAIL
from rota.asgi import create_api
from rota.clock import FakeClock
from tests.apps.fragile_app import Note

from .conftest import Token, api_settings, make_rota_app, serving

SECRET_VALUE = "s3cret-payload-value"


async def _entries(client: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    answer = await client.get("/api/v1/audit?limit=200", headers=headers)
    assert answer.status_code == 200, answer.text
    return list(reversed(answer.json()["items"]))


@asynccontextmanager
async def faked(db_url: str, **settings: Any) -> AsyncIterator[tuple[httpx.AsyncClient, FakeClock]]:
    """An API whose limiter and sampler run on a clock the test moves."""
    clock = FakeClock()
    app = make_rota_app(db_url)
    app.clock = clock
    try:
        async with serving(create_api(app, api_settings(**settings))) as client:
            yield client, clock
    finally:
        app.close()


async def test_a_500_on_a_mutating_call_is_audited(
    rota_app: rota.App, admin: dict[str, str]
) -> None:
    @rota_app.handler("note")
    async def note(ctx: rota.RunContext, payload: Note) -> None:
        return None

    async with serving(create_api(rota_app, api_settings())) as client:
        body = {"name": "n", "handler": "note", "payload": {"text": f"explode {SECRET_VALUE}"}}
        headers = {**admin, "X-Correlation-ID": "bug-1"}
        answer = await client.post("/api/v1/jobs", json=body, headers=headers)
        assert answer.status_code == 500
        [entry] = await _entries(client, admin)
    assert (entry["status"], entry["outcome"], entry["action"]) == (500, "failed", "create_job")
    assert (entry["namespace"], entry["correlation_id"]) == ("default", "bug-1")
    assert entry["detail"] == "internal-error"


async def test_requeue_and_refusals_carry_the_namespace(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    job = {"name": "a", "namespace": "team-a", "handler": "anything"}
    assert (await client.post("/api/v1/jobs", json=job, headers=admin)).status_code == 201
    run = (await client.post("/api/v1/jobs/a/trigger?namespace=team-a", headers=admin)).json()
    run_id = run["run_id"]
    assert (await client.post(f"/api/v1/runs/{run_id}/cancel", headers=admin)).status_code == 200
    operator = auth(scopes=("jobs:trigger",), namespaces=("team-a",), subject="op-a")
    requeued = await client.post(f"/api/v1/runs/{run_id}/requeue", headers=operator)
    assert requeued.status_code == 201, requeued.text
    viewer = auth(scopes=("jobs:read",), namespaces=("team-a",), subject="viewer-a")
    refused = await client.post(f"/api/v1/runs/{run_id}/cancel", headers=viewer)
    assert refused.status_code == 403
    outsider = auth(scopes=("jobs:trigger",), namespaces=("team-b",), subject="op-b")
    hidden = await client.post(f"/api/v1/runs/{run_id}/requeue", headers=outsider)
    assert hidden.status_code == 404

    team_a_admin = auth(scopes=("jobs:admin",), namespaces=("team-a",), subject="admin-a")
    seen = {(e["actor"], e["action"]): e for e in await _entries(client, team_a_admin)}
    assert seen[("jwt:op-a", "requeue_run")]["namespace"] == "team-a"
    assert seen[("jwt:viewer-a", "cancel_run")]["outcome"] == "denied"
    # Another team's probe lands in its own namespace, not in the one it probed.
    assert ("jwt:op-b", "requeue_run") not in seen
    team_b_admin = auth(scopes=("jobs:admin",), namespaces=("team-b",), subject="admin-b")
    probes = [e for e in await _entries(client, team_b_admin) if e["actor"] == "jwt:op-b"]
    assert [(e["namespace"], e["status"]) for e in probes] == [("team-b", 404)]


async def test_detail_is_bounded_and_holds_no_payload_value(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    calls = [
        # thousands of bad fields, each value a secret
        {"name": "x", "handler": "export", "payload": [SECRET_VALUE] * 5000},
        {"name": "y", "handler": "report", "payload": {"day": 1, "recipients": SECRET_VALUE}},
        {"name": "z", "handler": "report", "payload": {SECRET_VALUE: SECRET_VALUE * 100}},
        {"name": SECRET_VALUE * 10, "handler": "anything"},
        {"name": "w", "handler": SECRET_VALUE},
    ]
    for body in calls:
        answer = await client.post("/api/v1/jobs", json=body, headers=admin)
        assert answer.status_code == 422, answer.text
    entries = await _entries(client, admin)
    assert len(entries) == len(calls)
    for entry in entries:
        assert entry["outcome"] == "rejected"
        assert len(entry["detail"]) <= MAX_DETAIL
        values = " ".join(str(v) for k, v in entry.items() if k not in ("target", "detail"))
        assert SECRET_VALUE not in values
        assert SECRET_VALUE not in entry["detail"] or "payload." + SECRET_VALUE in entry["detail"]
    assert entries[0]["detail"].startswith("invalid-payload: body.payload.0")
    assert "(+4990 more)" in entries[0]["detail"]
    assert entries[1]["detail"] == "invalid-payload: body.payload.day, body.payload.recipients"


async def test_throttled_calls_are_sampled_per_window(db_url: str, auth: Token) -> None:
    headers = auth()
    async with faked(db_url, rate_burst=2, rate_per_second=0.001) as (client, clock):
        statuses = [
            (await client.post("/api/v1/jobs/j/pause", headers=headers)).status_code
            for _ in range(10)
        ]
        assert statuses == [404, 404] + [429] * 8
        clock.advance(61)
        assert (await client.post("/api/v1/jobs/j/pause", headers=headers)).status_code == 429
        entries = await _entries(client, auth(subject="auditor"))
    throttled = [e for e in entries if e["status"] == 429]
    assert [e["outcome"] for e in throttled] == ["throttled", "throttled"]
    assert "7 more in the previous window" in throttled[1]["detail"]
    assert len(entries) == 2 + 2


async def test_failed_authentications_are_recorded_without_the_credential(
    db_url: str, auth: Token
) -> None:
    forged = "rota_0123456789abcdef_" + "Q" * 43
    async with faked(db_url, failed_auth_burst=1000) as (client, clock):
        for credential in ("not-a-token", forged, forged):
            answer = await client.get(
                "/api/v1/jobs", headers={"Authorization": f"Bearer {credential}"}
            )
            assert answer.status_code == 401
        clock.advance(61)
        answer = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {forged}"})
        assert answer.status_code == 401
        entries = await _entries(client, auth(subject="auditor"))
    failures = [e for e in entries if e["action"] == "authenticate"]
    assert [(e["actor"], e["status"], e["outcome"]) for e in failures] == [
        ("anonymous", 401, "denied"),
        ("anonymous", 401, "denied"),
    ]
    assert failures[0]["target"] == "source 127.0.0.1"
    assert failures[0]["namespace"] is None
    assert failures[0]["detail"] == "jwt credential refused"
    assert failures[1]["detail"] == "api_key credential refused; 2 more in the previous window"
    assert all("Q" * 43 not in str(e) for e in entries)
