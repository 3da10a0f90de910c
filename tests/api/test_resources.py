"""Resources and bad input: each refusal is the right 4xx problem naming the field, and
nothing is written."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI

import rota
from rota.asgi import create_api
from rota.domain.states import RunState
from tests.engine.conftest import working
from tests.waiting import wait_for_state

from .conftest import api_settings, serving


async def _create(
    client: httpx.AsyncClient, headers: dict[str, str], **job: object
) -> httpx.Response:
    return await client.post("/api/v1/jobs", json=job, headers=headers)


async def test_job_lifecycle(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    made = await _create(
        client,
        admin,
        name="nightly",
        handler="report",
        payload={"day": "d"},
        cron="0 2 * * *",
        timezone="Europe/Berlin",
    )
    assert made.status_code == 201, made.text
    job = made.json()
    assert (job["kind"], job["misfire"], job["paused"]) == ("cron", "fire_now", False)
    assert job["next_fire_at"].endswith("Z")
    again = await _create(client, admin, name="nightly", handler="report", payload={"day": "d"})
    assert again.status_code == 409
    changed = await client.patch(
        "/api/v1/jobs/nightly", json={"interval_seconds": 60, "priority": 9}, headers=admin
    )
    assert changed.status_code == 200, changed.text
    assert (changed.json()["kind"], changed.json()["cron"], changed.json()["priority"]) == (
        "interval",
        None,
        9,
    )
    manual = await client.patch(
        "/api/v1/jobs/nightly", json={"interval_seconds": None}, headers=admin
    )
    assert manual.json()["kind"] == "manual"
    paused = await client.post("/api/v1/jobs/nightly/pause", headers=admin)
    assert paused.json()["paused"] is True
    resumed = await client.post("/api/v1/jobs/nightly/resume", headers=admin)
    assert resumed.json()["paused"] is False
    assert (await client.delete("/api/v1/jobs/nightly", headers=admin)).status_code == 204
    assert (await client.get("/api/v1/jobs/nightly", headers=admin)).status_code == 404


@pytest.mark.parametrize(
    ("job", "field"),
    [
        ({"name": "j", "handler": "nope"}, "handler"),
        ({"name": "j", "handler": "report", "payload": {"day": 3}}, "body.payload.day"),
        ({"name": "j", "handler": "report", "payload": None}, "body.payload"),
        ({"name": "j", "handler": "export", "payload": ["x"]}, "body.payload.0"),
        ({"name": "j", "handler": "mapping", "payload": [1]}, "body.payload"),
        ({"name": "j", "handler": "anything", "cron": "61 * * * *"}, "cron"),
        (
            {"name": "j", "handler": "anything", "cron": "0 * * * *", "timezone": "Mars/Base"},
            "timezone",
        ),
        (
            {"name": "j", "handler": "anything", "cron": "* * * * *", "interval_seconds": 5},
            "schedule",
        ),
        ({"name": "j", "handler": "anything", "surprise": 1}, "body.surprise"),
        ({"name": "bad name!", "handler": "anything"}, "body.name"),
        ({"name": "j", "handler": "anything", "priority": 11}, "body.priority"),
        ({"name": "j", "handler": "anything", "at": "2030-01-01T00:00:00"}, "body.at"),
        ({"name": "j", "handler": "anything", "misfire": "sometimes"}, "body.misfire"),
    ],
)
async def test_bad_jobs_are_422_naming_the_field(
    job: dict[str, object], field: str, client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    response = await client.post("/api/v1/jobs", json=job, headers=admin)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    fields = [e["field"] for e in problem["errors"]]
    assert any(f == field or f.startswith(field) or field in f for f in fields), (field, problem)
    assert (await client.get("/api/v1/jobs", headers=admin)).json()["items"] == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/dlq/replay", {"run_ids": [True]}, "run_ids"),
        ("/api/v1/runs", {"handler": "noop", "priority": True}, "priority"),
        ("/api/v1/runs", {"handler": "noop", "timeout_seconds": False}, "timeout_seconds"),
    ],
)
async def test_true_and_false_are_not_numbers(
    path: str, body: dict[str, object], field: str, client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    response = await client.post(path, json=body, headers=admin)
    assert response.status_code == 422, response.text
    assert f"{field} takes numbers, not true or false" in response.text


async def test_malformed_json_is_400(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    response = await client.post(
        "/api/v1/jobs", content=b'{"name": ', headers={**admin, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["type"] == "urn:rota:problem:malformed-json"


async def test_oversized_body_is_413(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    big = {"name": "j", "handler": "anything", "payload": "x" * (1024 * 1024)}
    response = await client.post("/api/v1/jobs", json=big, headers=admin)
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["X-Content-Type-Options"] == "nosniff"

    async def chunks():  # no Content-Length: the limit is counted as the body streams
        for _ in range(20):
            yield b"x" * 65536

    streamed = await client.post("/api/v1/jobs", content=chunks(), headers=admin)
    assert streamed.status_code == 413


async def test_trigger_is_idempotent_and_carries_the_correlation_id(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _create(client, admin, name="adhoc", handler="report", payload={"day": "a"})
    headers = {**admin, "Idempotency-Key": "deploy-42", "X-Correlation-ID": "req-7"}
    first = await client.post("/api/v1/jobs/adhoc/trigger", headers=headers)
    second = await client.post("/api/v1/jobs/adhoc/trigger", headers=headers)
    assert first.status_code == second.status_code == 202
    assert first.json() == second.json()
    other = await client.post(
        "/api/v1/jobs/adhoc/trigger", json={"payload": {"day": "b"}}, headers=admin
    )
    assert other.json()["run_id"] != first.json()["run_id"]
    run = (await client.get(f"/api/v1/runs/{first.json()['run_id']}", headers=admin)).json()["run"]
    assert (run["correlation_id"], run["payload"]) == ("req-7", {"day": "a"})
    overridden = (await client.get(f"/api/v1/runs/{other.json()['run_id']}", headers=admin)).json()
    assert overridden["run"]["payload"] == {"day": "b"}
    bad = await client.post("/api/v1/jobs/adhoc/trigger", json={"payload": {"x": 1}}, headers=admin)
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["field"] == "body.payload.day"
    unknown = await client.post("/api/v1/jobs/adhoc/trigger", json={"extra": 1}, headers=admin)
    assert unknown.status_code == 422
    hostile = await client.post(
        "/api/v1/jobs/adhoc/trigger", headers={**admin, "X-Correlation-ID": "a b\x7f<script>"}
    )
    assert hostile.headers["X-Correlation-ID"] != "a b\x7f<script>"


async def test_runs_filters_and_keyset_pages(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    await _create(client, admin, name="alpha", handler="anything", payload=1)
    await _create(client, admin, name="beta", handler="mapping", payload={})
    ids = [
        (await client.post(f"/api/v1/jobs/{name}/trigger", headers=admin)).json()["run_id"]
        for name in ("alpha", "beta", "alpha", "alpha", "beta")
    ]
    seen: list[int] = []
    cursor = None
    for _ in range(5):
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/api/v1/runs", params=params, headers=admin)).json()
        seen += [r["id"] for r in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(ids, reverse=True)
    alpha = (await client.get("/api/v1/runs?job=alpha", headers=admin)).json()["items"]
    assert [r["id"] for r in alpha] == [ids[3], ids[2], ids[0]]
    by_text = (await client.get("/api/v1/runs?q=BET", headers=admin)).json()["items"]
    assert [r["id"] for r in by_text] == [ids[4], ids[1]]
    by_handler = (
        await client.get("/api/v1/runs?handler=mapping&state=pending", headers=admin)
    ).json()
    assert len(by_handler["items"]) == 2
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    later = await client.get("/api/v1/runs", params={"created_after": future}, headers=admin)
    assert later.json()["items"] == []
    for bad, field in [
        ({"cursor": "bm90LWEtY3Vyc29y"}, "query.cursor"),
        ({"cursor": "!!"}, "query.cursor"),
    ]:
        response = await client.get("/api/v1/runs", params=bad, headers=admin)
        assert response.status_code == 400
        assert response.json()["errors"][0]["field"] == field
    for bad, field in [
        ({"stat": "pending"}, "query.stat"),
        ({"handler": ["a", "b"]}, "query.handler"),
        ({"state": "sleeping"}, "query.state.0"),
        ({"limit": 0}, "query.limit"),
        ({"created_after": "yesterday"}, "query.created_after"),
        ({"created_after": "2030-01-01T00:00:00"}, "query.created_after"),
    ]:
        response = await client.get("/api/v1/runs", params=bad, headers=admin)
        assert response.status_code == 422, (bad, response.text)
        assert response.json()["errors"][0]["field"] == field


async def test_dead_letter_queue_lists_and_replays(db_url: str, admin: dict[str, str]) -> None:
    app = rota.App(
        settings=rota.Settings(database_url=db_url, poll_seconds=0.02, sqlite_poll_seconds=0.02)
    )

    @app.handler("doomed", max_attempts=1)
    async def doomed(ctx: rota.RunContext, payload: dict[str, int]) -> None:
        ctx.log.info("trying", n=payload["n"])
        raise RuntimeError("always fails")

    api = create_api(app, api_settings())
    async with serving(api) as client:
        await _create(client, admin, name="d", handler="doomed", payload={"n": 1})
        first = (await client.post("/api/v1/jobs/d/trigger", headers=admin)).json()["run_id"]
        second = (await client.post("/api/v1/jobs/d/trigger", headers=admin)).json()["run_id"]
        store = await app.store()
        async with working(app, concurrency=2, node_id="w1"):
            for run_id in (first, second):
                await wait_for_state(store, run_id, RunState.DEAD_LETTERED)
            dead = (await client.get("/api/v1/dlq", headers=admin)).json()["items"]
            workers = (await client.get("/api/v1/workers", headers=admin)).json()["items"]
            drained = await client.post("/api/v1/workers/w1/drain", headers=admin)
            assert (drained.status_code, drained.json()["state"]) == (202, "draining")
            unknown = await client.post("/api/v1/workers/nobody/drain", headers=admin)
            assert unknown.status_code == 404
        assert len(dead) == 2
        assert [(w["node_id"], w["state"]) for w in workers] == [("w1", "active")]
        assert workers[0]["heartbeat_age_seconds"] is not None
        assert {r["state"] for r in dead} == {"dead_lettered"}
        detail = (await client.get(f"/api/v1/runs/{first}", headers=admin)).json()
        [attempt] = detail["attempts"]
        assert (attempt["outcome"], attempt["worker_id"], attempt["fence"]) == ("failed", "w1", 1)
        assert "always fails" in attempt["error"]
        assert attempt["duration_seconds"] >= 0
        logs = (await client.get(f"/api/v1/runs/{first}/logs", headers=admin)).json()["lines"]
        assert [(line["message"], line["fields"]["n"]) for line in logs] == [("trying", 1)]
        run = (await client.get(f"/api/v1/runs/{first}", headers=admin)).json()["run"]
        assert run["correlation_id"]  # the trigger request's
        one = await client.post(f"/api/v1/dlq/{first}/replay", headers=admin)
        assert one.status_code == 201
        again = await client.post(f"/api/v1/runs/{first}/requeue", headers=admin)
        assert again.json()["new_run_id"] == one.json()["new_run_id"]  # replay is idempotent
        many = await client.post(
            "/api/v1/dlq/replay", json={"run_ids": [second, 424242]}, headers=admin
        )
        results = many.json()["results"]
        assert results[0]["new_run_id"] is not None
        assert results[1]["new_run_id"] is None
        assert "does not exist" in results[1]["error"]
        live = await client.post(f"/api/v1/runs/{one.json()['new_run_id']}/requeue", headers=admin)
        assert live.status_code == 409
        assert (
            await client.post("/api/v1/dlq/replay", json={"run_ids": []}, headers=admin)
        ).status_code == 422
        leader = (await client.get("/api/v1/leader", headers=admin)).json()["leader"]
        assert leader is not None
        assert leader["holder"] == "w1"
        assert leader["term"] >= 1
    app.close()


async def test_handlers_publish_payload_schemas(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    items = {
        h["name"]: h for h in (await client.get("/api/v1/handlers", headers=admin)).json()["items"]
    }
    assert items["report"]["payload_schema"]["required"] == ["day"]
    assert items["export"]["payload_schema"] == {"items": {"type": "integer"}, "type": "array"}
    assert items["anything"]["payload_schema"] == {}
    assert items["mapping"]["payload_schema"]["type"] == "object"


async def test_cron_preview(client: httpx.AsyncClient, admin: dict[str, str]) -> None:
    response = await client.get(
        "/api/v1/cron/preview",
        params={"expression": "30 2 * * *", "timezone": "Europe/Berlin", "count": 3},
        headers=admin,
    )
    preview = response.json()
    assert len(preview["instants"]) == 3
    assert all(i["local"][11:16] == "02:30" for i in preview["instants"])
    bad = await client.get("/api/v1/cron/preview", params={"expression": "nope"}, headers=admin)
    assert bad.status_code == 422
    zone = await client.get(
        "/api/v1/cron/preview",
        params={"expression": "* * * * *", "timezone": "Nowhere/X"},
        headers=admin,
    )
    assert zone.status_code == 422


async def test_ready_reports_a_stuck_backlog(db_url: str, admin: dict[str, str]) -> None:
    app = rota.App(settings=rota.Settings(database_url=db_url))
    app.handler("x")(_noop)
    api = create_api(app, api_settings(ready_max_due_wait_seconds=0.001))
    async with serving(api) as client:
        assert (await client.get("/health/ready")).status_code == 200
        await _create(client, admin, name="x", handler="x")
        await client.post("/api/v1/jobs/x/trigger", headers=admin)
        await asyncio.sleep(0.01)  # the run must have waited past a 1 ms threshold
        response = await client.get("/health/ready")
        assert response.status_code == 503
        assert "a due run has waited" in response.json()["detail"]
        assert (await client.get("/health/live")).status_code == 200
    app.close()


async def _noop(ctx: rota.RunContext, payload: object) -> None:
    return None


async def test_ready_reports_an_unreachable_database() -> None:
    app = rota.App(settings=rota.Settings(database_url="postgresql://nobody@127.0.0.1:1/none"))
    async with serving(create_api(app, api_settings())) as client:
        response = await client.get("/health/ready")
        assert response.status_code == 503
        assert response.json()["detail"].startswith("database unreachable")
        assert (await client.get("/health/live")).status_code == 200


async def test_ready_reports_a_schema_behind(sqlite_url: str) -> None:
    import sqlite3

    app = rota.App(settings=rota.Settings(database_url=sqlite_url))
    app.close()
    rota.App(settings=rota.Settings(database_url=sqlite_url)).list_runs()  # migrate
    path = sqlite_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute(  # the latest migration, whichever it is, "not yet applied"
            "DELETE FROM rota_schema_migrations"
            " WHERE version = (SELECT max(version) FROM rota_schema_migrations)"
        )
    app = rota.App(settings=rota.Settings(database_url=sqlite_url, auto_migrate=False))
    async with serving(create_api(app, api_settings())) as client:
        response = await client.get("/health/ready")
        assert response.status_code == 503
        assert "schema" in response.json()["detail"]


async def test_rate_limit_is_429_with_retry_after(rota_app: rota.App, auth) -> None:
    api: FastAPI = create_api(rota_app, api_settings(rate_per_second=0.01, rate_burst=3))
    async with serving(api) as client:
        headers = auth(scopes=("jobs:read",))
        statuses = [
            (await client.get("/api/v1/jobs", headers=headers)).status_code for _ in range(4)
        ]
        assert statuses == [200, 200, 200, 429]
        limited = await client.get("/api/v1/jobs", headers=headers)
        assert limited.headers["content-type"] == "application/problem+json"
        assert int(limited.headers["Retry-After"]) >= 1
        other = auth(scopes=("jobs:read",), subject="someone-else")
        assert (await client.get("/api/v1/jobs", headers=other)).status_code == 200


async def test_security_headers_on_every_answer(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    for response in (
        await client.get("/health/live"),
        await client.get("/api/v1/jobs"),
        await client.get("/api/v1/jobs", headers=admin),
        await client.get("/nowhere"),
    ):
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["X-Frame-Options"] == "DENY"
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Correlation-ID"]
    missing = await client.get("/nowhere")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"


def test_production_refuses_a_missing_or_public_key(rota_app: rota.App) -> None:
    from rota.api.settings import DEV_SIGNING_KEY, InsecureConfiguration

    for key in (None, DEV_SIGNING_KEY):
        with pytest.raises(InsecureConfiguration):
            create_api(rota_app, api_settings(env="production", signing_key=key))
    with pytest.raises(InsecureConfiguration):
        api_settings(signing_key="short")
    api = create_api(rota_app, api_settings(env="production"))
    paths = {route.path for route in api.routes if hasattr(route, "path")}
    assert "/dev/token" not in str(api.openapi()["paths"])
    assert paths


async def test_dev_token_endpoint(client: httpx.AsyncClient) -> None:
    answer = (await client.post("/dev/token", json={"role": "viewer", "namespaces": ["a"]})).json()
    headers = {"Authorization": f"Bearer {answer['access_token']}"}
    assert answer["scopes"] == ["jobs:read"]
    assert (await client.get("/api/v1/jobs", headers=headers)).status_code == 200
    assert (await client.post("/api/v1/jobs/x/pause", headers=headers)).status_code == 403


async def test_a_bug_is_a_500_problem_without_details(rota_app: rota.App) -> None:
    api = create_api(rota_app, api_settings())

    async def broken() -> None:
        raise RuntimeError("secret internals")

    api.router.add_api_route("/boom", broken, methods=["GET"])
    async with serving(api) as client:
        response = await client.get("/boom", headers={"X-Correlation-ID": "bug-1"})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.json()["correlation_id"] == "bug-1"
    assert "secret" not in response.text


async def test_method_not_allowed_lists_every_method_of_the_path(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    response = await client.put("/api/v1/jobs", headers=admin)
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, POST"
