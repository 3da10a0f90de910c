"""Namespaces isolate, API keys work until revoked, and the audit log records every
mutating call."""

from __future__ import annotations

import httpx

from .conftest import Token


async def _job(
    client: httpx.AsyncClient, headers: dict[str, str], namespace: str, name: str
) -> None:
    response = await client.post(
        "/api/v1/jobs",
        json={"name": name, "namespace": namespace, "handler": "anything", "payload": {"n": 1}},
        headers=headers,
    )
    assert response.status_code == 201, response.text


async def test_namespaces_isolate_jobs_and_runs(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    await _job(client, admin, "team-a", "a-job")
    await _job(client, admin, "team-b", "b-job")
    run_b = (await client.post("/api/v1/jobs/b-job/trigger?namespace=team-b", headers=admin)).json()
    team_a = auth(namespaces=("team-a",))

    listed = (await client.get("/api/v1/jobs", headers=team_a)).json()["items"]
    assert [j["name"] for j in listed] == ["a-job"]
    assert (
        await client.get("/api/v1/jobs/a-job?namespace=team-a", headers=team_a)
    ).status_code == 200
    # Another team's job and run answer exactly like missing ones.
    for method, path in [
        ("GET", "/api/v1/jobs/b-job?namespace=team-b"),
        ("PATCH", "/api/v1/jobs/b-job?namespace=team-b"),
        ("DELETE", "/api/v1/jobs/b-job?namespace=team-b"),
        ("POST", "/api/v1/jobs/b-job/pause?namespace=team-b"),
        ("POST", "/api/v1/jobs/b-job/trigger?namespace=team-b"),
        ("GET", f"/api/v1/runs/{run_b['run_id']}"),
        ("GET", f"/api/v1/runs/{run_b['run_id']}/logs"),
        ("POST", f"/api/v1/runs/{run_b['run_id']}/cancel"),
        ("POST", f"/api/v1/runs/{run_b['run_id']}/requeue"),
        ("POST", f"/api/v1/dlq/{run_b['run_id']}/replay"),
    ]:
        body = {"payload": {"n": 2}} if method == "PATCH" else None
        response = await client.request(method, path, headers=team_a, json=body)
        assert response.status_code == 404, (method, path, response.text)
    created = await client.post(
        "/api/v1/jobs",
        json={"name": "x", "namespace": "team-b", "handler": "anything"},
        headers=team_a,
    )
    assert created.status_code == 404
    runs = (await client.get("/api/v1/runs", headers=team_a)).json()["items"]
    assert runs == []
    narrowed = await client.get("/api/v1/runs?namespace=team-b", headers=team_a)
    assert narrowed.json()["items"] == []
    everything = (await client.get("/api/v1/runs", headers=admin)).json()["items"]
    assert [r["id"] for r in everything] == [run_b["run_id"]]
    # The job is still there, untouched by the refused calls.
    still = await client.get("/api/v1/jobs/b-job?namespace=team-b", headers=admin)
    assert still.json()["paused"] is False


async def test_api_keys_work_until_revoked(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    created = await client.post(
        "/api/v1/api-keys",
        json={"name": "ci", "scopes": ["jobs:read", "jobs:trigger"], "namespaces": ["default"]},
        headers=admin,
    )
    assert created.status_code == 201, created.text
    key = created.json()
    assert key["key"].startswith(f"rota_{key['key_id']}_")
    machine = {"Authorization": f"Bearer {key['key']}"}
    await _job(client, admin, "default", "nightly")
    await _job(client, admin, "other", "elsewhere")

    assert (await client.get("/api/v1/jobs", headers=machine)).json()["items"][0][
        "name"
    ] == "nightly"
    assert len((await client.get("/api/v1/jobs", headers=machine)).json()["items"]) == 1
    triggered = await client.post("/api/v1/jobs/nightly/trigger", headers=machine)
    assert triggered.status_code == 202
    denied = await client.delete("/api/v1/jobs/nightly", headers=machine)
    assert denied.status_code == 403  # no jobs:manage on this key

    listed = (await client.get("/api/v1/api-keys", headers=admin)).json()["items"]
    assert [k["key_id"] for k in listed] == [key["key_id"]]
    assert "key" not in listed[0]
    assert "secret_hash" not in listed[0]

    wrong_secret = key["key"][:-4] + ("AAAA" if not key["key"].endswith("AAAA") else "BBBB")
    bad = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {wrong_secret}"})
    assert bad.status_code == 401

    revoked = await client.delete(f"/api/v1/api-keys/{key['key_id']}", headers=admin)
    assert revoked.status_code == 204
    after = await client.get("/api/v1/jobs", headers=machine)
    assert after.status_code == 401
    assert (
        await client.delete(f"/api/v1/api-keys/{key['key_id']}", headers=admin)
    ).status_code == 204
    assert (
        await client.delete("/api/v1/api-keys/0123456789abcdef", headers=admin)
    ).status_code == 404


async def test_nobody_mints_a_key_beyond_their_own_reach(
    client: httpx.AsyncClient, auth: Token
) -> None:
    team_admin = auth(scopes=("jobs:admin", "jobs:read"), namespaces=("team-a",))
    for body in (
        {"name": "k", "scopes": ["jobs:manage"], "namespaces": ["team-a"]},
        {"name": "k", "scopes": ["jobs:read"], "namespaces": ["team-b"]},
        {"name": "k", "scopes": ["jobs:read"], "namespaces": ["*"]},
    ):
        response = await client.post("/api/v1/api-keys", json=body, headers=team_admin)
        assert response.status_code == 422, (body, response.text)
    ok = await client.post(
        "/api/v1/api-keys",
        json={"name": "k", "scopes": ["jobs:read"], "namespaces": ["team-a"]},
        headers=team_admin,
    )
    assert ok.status_code == 201


async def test_audit_log_records_each_mutating_call(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    calls = [
        ("POST", "/api/v1/jobs", {"name": "j", "handler": "anything", "payload": 1}, 201),
        ("PATCH", "/api/v1/jobs/j", {"payload": 2}, 200),
        ("POST", "/api/v1/jobs/j/pause", None, 200),
        ("POST", "/api/v1/jobs/j/resume", None, 200),
        ("POST", "/api/v1/jobs/j/trigger", None, 202),
        ("POST", "/api/v1/runs/1/cancel", None, 200),
        ("POST", "/api/v1/runs/1/requeue", None, 201),
        ("POST", "/api/v1/dlq/replay", {"run_ids": [1, 99]}, 200),
        ("POST", "/api/v1/jobs", {"name": "bad", "handler": "report", "payload": {}}, 422),
        ("DELETE", "/api/v1/jobs/j", None, 204),
        ("DELETE", "/api/v1/jobs/j", None, 404),
    ]
    for i, (method, path, body, status) in enumerate(calls):
        headers = {**admin, "X-Correlation-ID": f"call-{i}"}
        response = await client.request(method, path, json=body, headers=headers)
        assert response.status_code == status, (method, path, response.text)
        assert response.headers["X-Correlation-ID"] == f"call-{i}"
    viewer = auth(scopes=("jobs:read",), subject="viewer")
    assert (await client.post("/api/v1/jobs/j/trigger", headers=viewer)).status_code == 403
    # Unauthenticated calls are not audited (anonymous noise cannot flood the log).
    assert (await client.post("/api/v1/jobs/j/trigger")).status_code == 401
    # Reads are not audited.
    await client.get("/api/v1/jobs", headers=admin)

    entries = (await client.get("/api/v1/audit?limit=200", headers=admin)).json()["items"]
    entries.reverse()
    assert len(entries) == len(calls) + 1
    for i, ((method, path, _, status), entry) in enumerate(zip(calls, entries, strict=False)):
        assert entry["actor"] == "jwt:tester"
        assert entry["status"] == status, (method, path, entry)
        assert entry["correlation_id"] == f"call-{i}"
    assert [e["action"] for e in entries[:5]] == [
        "create_job",
        "update_job",
        "pause_job",
        "resume_job",
        "trigger_job",
    ]
    assert entries[0]["target"] == "job default/j"
    assert entries[0]["namespace"] == "default"
    assert entries[5]["target"] == "run 1"
    assert entries[5]["action"] == "cancel_run"
    rejected = entries[8]
    assert (rejected["outcome"], rejected["status"]) == ("rejected", 422)
    assert "payload.day" in rejected["detail"]
    assert entries[10]["outcome"] == "rejected"
    denied = entries[-1]
    assert (denied["actor"], denied["outcome"], denied["status"]) == ("jwt:viewer", "denied", 403)

    page = (await client.get("/api/v1/audit?limit=5", headers=admin)).json()
    rest = (
        await client.get(f"/api/v1/audit?limit=200&cursor={page['next_cursor']}", headers=admin)
    ).json()
    assert len(page["items"]) + len(rest["items"]) == len(entries)
    assert (await client.get("/api/v1/audit?cursor=bogus", headers=admin)).status_code == 400


async def test_a_team_admin_reads_only_its_namespaces_audit(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    await _job(client, admin, "team-a", "a")
    await _job(client, admin, "team-b", "b")
    team_a = auth(scopes=("jobs:admin",), namespaces=("team-a",))
    entries = (await client.get("/api/v1/audit", headers=team_a)).json()["items"]
    assert [e["target"] for e in entries] == ["job team-a/a"]
