"""Values at the edges (issue 8, findings 2 and 3): what a store cannot hold is a 422
naming the field, never a 500 and never an echo of the value; cursors and instants
outside what the stores represent are 4xx; a job the planner had to set aside shows why.
Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import httpx
import pytest

import rota
from rota.engine.planner import Planner
from tests.schedules.test_poison import _execute, _refusing_runs_of

SECRET = "s3cr3t-payload-value"
EDGE_INSTANTS = [
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:00:00+00:00",
    "1969-12-31T23:59:59Z",
    "9000-01-01T00:00:00Z",
]


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _problem(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert SECRET not in response.text
    body: dict[str, object] = response.json()
    return body


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"note": SECRET + "\x00"}, "payload.note"),
        ({SECRET + "\x00": 1}, "payload.<key 0>"),
        ({"deep": [SECRET, SECRET + "\u0000"]}, "payload.deep.1"),
    ],
)
async def test_a_nul_in_a_job_payload_is_422(
    client: httpx.AsyncClient, admin: dict[str, str], payload: object, field: str
) -> None:
    job = {"name": "nul", "handler": "anything", "payload": payload, "interval_seconds": 60}
    problem = _problem(await client.post("/api/v1/jobs", json=job, headers=admin), 422)
    [error] = problem["errors"]  # type: ignore[misc]
    assert error["field"] == field
    assert "without NUL (U+0000)" in error["message"]
    assert (await client.get("/api/v1/jobs", headers=admin)).json()["items"] == []


async def test_an_unpaired_surrogate_is_refused(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    body = b'{"name": "s", "handler": "anything", "payload": {"a": "\\ud800"}}'
    response = await client.post(
        "/api/v1/jobs", content=body, headers={**admin, "content-type": "application/json"}
    )
    assert 400 <= response.status_code < 500, response.text
    assert (await client.get("/api/v1/jobs", headers=admin)).json()["items"] == []


async def test_a_nul_in_a_trigger_payload_or_search_is_422(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    job = {"name": "manual", "handler": "anything", "payload": 1}
    assert (await client.post("/api/v1/jobs", json=job, headers=admin)).status_code == 201
    trigger = await client.post(
        "/api/v1/jobs/manual/trigger", json={"payload": {"k": SECRET + "\x00"}}, headers=admin
    )
    assert _problem(trigger, 422)["errors"] == [
        {
            "field": "payload.k",
            "message": "expected text without NUL (U+0000) or unpaired surrogates (U+D800-U+DFFF)",
        }
    ]
    for path in ("/api/v1/runs", "/api/v1/dlq"):
        search = await client.get(path, params={"q": "a\x00b"}, headers=admin)
        assert _problem(search, 422)["errors"] == [
            {
                "field": "q",
                "message": "expected text without NUL (U+0000) or unpaired "
                "surrogates (U+D800-U+DFFF)",
            }
        ]


async def test_numbers_json_cannot_carry_are_refused(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    job = {"name": "manual", "handler": "anything", "payload": 1}
    assert (await client.post("/api/v1/jobs", json=job, headers=admin)).status_code == 201
    for body in (
        b'{"payload": 1e400}',
        b'{"payload": [NaN]}',
        b'{"payload": ' + b"9" * 5000 + b"}",
    ):
        response = await client.post(
            "/api/v1/jobs/manual/trigger",
            content=body,
            headers={**admin, "content-type": "application/json"},
        )
        assert 400 <= response.status_code < 500, (body[:30], response.text)


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/dlq", "/api/v1/audit"])
@pytest.mark.parametrize(
    "cursor", ["9999999999999999999", "9223372036854775808", "9007199254740992", "0", "-1"]
)
async def test_cursors_past_the_id_range_are_400(
    client: httpx.AsyncClient, admin: dict[str, str], path: str, cursor: str
) -> None:
    kind = "audit" if path.endswith("audit") else "run"
    response = await client.get(path, params={"cursor": _cursor(f"{kind}:{cursor}")}, headers=admin)
    assert _problem(response, 400)["type"] == "urn:rota:problem:bad-cursor"


async def test_the_largest_id_cursor_is_accepted(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    response = await client.get(
        "/api/v1/runs", params={"cursor": _cursor("run:9007199254740991")}, headers=admin
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("instant", EDGE_INSTANTS)
async def test_instants_outside_the_range_are_422(
    client: httpx.AsyncClient, admin: dict[str, str], instant: str
) -> None:
    for name in ("created_after", "created_before"):
        response = await client.get("/api/v1/runs", params={name: instant}, headers=admin)
        assert _problem(response, 422)["errors"][0]["field"] == f"query.{name}"  # type: ignore[index]
    job = {"name": "once", "handler": "anything", "at": instant}
    response = await client.post("/api/v1/jobs", json=job, headers=admin)
    assert _problem(response, 422)["errors"][0]["field"] == "body.at"  # type: ignore[index]


async def test_instants_inside_the_range_are_accepted(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    for instant in ("1970-01-01T00:00:00Z", "8999-12-31T23:59:59+00:00"):
        response = await client.get(
            "/api/v1/runs", params={"created_after": instant}, headers=admin
        )
        assert response.status_code == 200, response.text
    job = {"name": "late", "handler": "anything", "at": "8999-12-31T23:59:59+00:00"}
    assert (await client.post("/api/v1/jobs", json=job, headers=admin)).status_code == 201


async def test_a_set_aside_job_shows_its_planning_error(
    client: httpx.AsyncClient, admin: dict[str, str], rota_app: rota.App, db_url: str
) -> None:
    job = {"name": "poisoned", "handler": "anything", "interval_seconds": 60}
    made = await client.post("/api/v1/jobs", json=job, headers=admin)
    assert made.status_code == 201, made.text
    assert made.json()["planning_error"] is None
    store = await rota_app.store()
    with _refusing_runs_of(db_url, made.json()["id"]):
        report = await Planner(store, timedelta(0)).tick(datetime.now(UTC) + timedelta(minutes=2))
    assert report.set_aside == 1
    shown = (await client.get("/api/v1/jobs/poisoned", headers=admin)).json()
    assert "poisoned row" in shown["planning_error"]
    assert shown["planning_failed_at"] is not None
    assert shown["planning_retry_at"] is not None
    [listed] = (await client.get("/api/v1/jobs", headers=admin)).json()["items"]
    assert listed["planning_error"] == shown["planning_error"]
    # Updating the job clears it: the planner tries again at once.
    patched = await client.patch("/api/v1/jobs/poisoned", json={"priority": 3}, headers=admin)
    assert patched.json()["planning_error"] is None


async def test_a_job_that_cannot_be_read_does_not_break_the_listing(
    client: httpx.AsyncClient, admin: dict[str, str], rota_app: rota.App, db_url: str
) -> None:
    """A row an older rota or a hand edit left unreadable: the others are still listed,
    it answers a clear 409, and it can be deleted or replaced."""
    for name in ("good", "broken"):
        job = {"name": name, "handler": "anything", "interval_seconds": 60}
        assert (await client.post("/api/v1/jobs", json=job, headers=admin)).status_code == 201
    _execute(db_url, "UPDATE rota_jobs SET spec = '{\"name\": \"broken\"}' WHERE name = 'broken'")

    listed = await client.get("/api/v1/jobs", headers=admin)
    assert [j["name"] for j in listed.json()["items"]] == ["good"]
    shown = await client.get("/api/v1/jobs/broken", headers=admin)
    assert _problem(shown, 409)["type"] == "urn:rota:problem:unreadable-job"
    rota_app.schedule("broken", handler="anything", interval=30)  # replaced
    assert (await client.get("/api/v1/jobs/broken", headers=admin)).status_code == 200
    _execute(db_url, "UPDATE rota_jobs SET spec = '{\"name\": \"broken\"}' WHERE name = 'broken'")
    deleted = await client.delete("/api/v1/jobs/broken", headers=admin)
    assert deleted.status_code == 204


def test_the_cli_job_list_says_when_planning_failed() -> None:
    from rota.cli.jobs import _planning

    assert _planning({"planning_error": None}) == "ok"
    shown = _planning(
        {
            "planning_error": "StoreError: poisoned row",
            "planning_failed_at": "2026-06-01T12:01:00Z",
            "planning_retry_at": "2026-06-01T12:02:00Z",
        }
    )
    assert (
        shown == "FAILED 2026-06-01T12:01:00Z, retry 2026-06-01T12:02:00Z: StoreError: poisoned row"
    )
