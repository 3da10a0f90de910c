"""POST /api/v1/jobs/{name}/backfill: slots in the schedule's zone, idempotent per
slot, refusals as 422s naming the value with nothing written."""

from __future__ import annotations

import httpx

from .conftest import Token

HOURLY = {"name": "hourly", "handler": "anything", "cron": "0 * * * *", "timezone": "Europe/Berlin"}
AUTUMN_WEEK = {"from": "2026-10-19T00:00:00+02:00", "to": "2026-10-26T00:00:00+01:00"}
BACKFILL = "/api/v1/jobs/hourly/backfill"


async def _runs(client: httpx.AsyncClient, admin: dict[str, str]) -> int:
    page = await client.get("/api/v1/runs", params={"limit": 200}, headers=admin)
    return len(page.json()["items"])


async def test_a_week_across_the_dst_change_then_again(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    assert (await client.post("/api/v1/jobs", json=HOURLY, headers=admin)).status_code == 201
    first = await client.post(BACKFILL, json=AUTUMN_WEEK, headers=admin)
    assert first.status_code == 200, first.text
    assert {k: first.json()[k] for k in ("total", "created", "existing", "next_from")} == {
        "total": 169,
        "created": 169,
        "existing": 0,
        "next_from": None,
    }
    again = (await client.post(BACKFILL, json=AUTUMN_WEEK, headers=admin)).json()
    assert (again["created"], again["existing"]) == (0, 169)
    assert await _runs(client, admin) == 169


async def test_bad_ranges_are_refused_naming_the_value(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    assert (await client.post("/api/v1/jobs", json=HOURLY, headers=admin)).status_code == 201
    reversed_range = {"from": AUTUMN_WEEK["to"], "to": AUTUMN_WEEK["from"]}
    cases = [
        (reversed_range, "from before to"),
        ({"from": "2026-01-01T00:00:00Z", "to": "2026-03-01T00:00:00Z"}, "slot count: 1416"),
        ({**AUTUMN_WEEK, "colour": "red"}, "colour"),
        ({"from": "2026-10-19T00:00:00", "to": AUTUMN_WEEK["to"]}, "from"),
        ({**AUTUMN_WEEK, "max_in_flight": 0}, "max_in_flight"),
    ]
    for body, named in cases:
        answer = await client.post(BACKFILL, json=body, headers=admin)
        assert answer.status_code == 422, (body, answer.text)
        assert named in answer.text, answer.text
    assert await _runs(client, admin) == 0
    many = {"from": "2026-01-01T00:00:00Z", "to": "2026-03-01T00:00:00Z", "confirm": True}
    confirmed = await client.post(BACKFILL, json={**many, "dry_run": True}, headers=admin)
    assert confirmed.json()["total"] == 1416  # 59 days of hours, the spring change later
    assert await _runs(client, admin) == 0


async def test_manual_unknown_and_unreachable_jobs(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    manual = {"name": "manual", "handler": "anything"}
    assert (await client.post("/api/v1/jobs", json=manual, headers=admin)).status_code == 201
    refused = await client.post("/api/v1/jobs/manual/backfill", json=AUTUMN_WEEK, headers=admin)
    assert refused.status_code == 422
    assert "manual job has no slots" in refused.text
    missing = await client.post("/api/v1/jobs/nope/backfill", json=AUTUMN_WEEK, headers=admin)
    assert missing.status_code == 404
    reader = auth(scopes=("jobs:read",))
    assert (await client.post(BACKFILL, json=AUTUMN_WEEK, headers=reader)).status_code == 403
    elsewhere = auth(namespaces=("team-b",))
    hidden = await client.post(BACKFILL, json=AUTUMN_WEEK, headers=elsewhere)
    assert hidden.status_code == 404
