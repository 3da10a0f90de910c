"""A budget for every request (issue 31): no request holds the event loop for more
than ~100 ms on input its caller controls. The hostile inputs are a JSON Schema
``pattern`` that backtracks catastrophically (``^(a+)+$``) and values it does not match,
on the three paths that check a start's values against its template's parameters:
starting a workflow, triggering a job template and publishing to a subscribed workflow.

The property is that the work is off the loop (and linear), so it is measured as the
loop's lag, by a ticker task, not as the request's wall-clock time; 100 ms is far above
what a shared 2-core machine adds to a 10 ms tick, and far below the seconds that
Python's backtracking ``re`` took here before the fix (5.9 s for 27 characters)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx
import pytest

from tests.api.conftest import Token

T = TypeVar("T")

pytestmark = pytest.mark.timeout(60)

TICK_SECONDS = 0.01
MAX_LAG_SECONDS = 0.1
CATASTROPHIC = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}},
}
# 27 characters took 5.9 s with Python's re (each more doubles it); RE2 takes microseconds
# for them and for 60,000.
HOSTILE_VALUES = ["a" * 27 + "!", "a" * 60_000 + "!"]


async def with_lag(action: Awaitable[T]) -> tuple[T, float]:
    """``action``'s result, and the longest the loop went without running a ticker
    that wants to run every TICK_SECONDS (beyond that tick) while it was awaited."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    worst = 0.0

    async def tick() -> None:
        nonlocal worst
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(TICK_SECONDS)
            now = loop.time()
            worst = max(worst, now - last - TICK_SECONDS)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        result = await action
    finally:
        done.set()
        await ticker
    return result, worst


async def _refused_without_lag(
    client: httpx.AsyncClient, path: str, headers: dict[str, str], body: Any
) -> None:
    """Every hostile value, sent by ``body(number, value)``, is refused (422 naming the
    parameter) while the loop goes on ticking."""
    for number, value in enumerate(HOSTILE_VALUES):
        request = client.post(path, json=body(number, value), headers=headers)
        answer, lag = await with_lag(request)
        assert answer.status_code == 422, answer.text
        assert "parameter 'code'" in answer.json()["detail"]
        assert lag < MAX_LAG_SECONDS, f"the loop stalled {lag:.3f} s on {path}"


async def _save_template(client: httpx.AsyncClient, admin: dict[str, str], name: str) -> None:
    workflow = {
        "name": name,
        "steps": [{"name": "greet", "handler": "anything"}],
        "parameters": CATASTROPHIC,
    }
    saved = await client.post("/api/v1/workflows", json=workflow, headers=admin)
    assert saved.status_code == 200, saved.text


async def test_starting_a_workflow_template(client: httpx.AsyncClient, auth: Token) -> None:
    admin = auth()
    await _save_template(client, admin, "sign-up")
    path = "/api/v1/workflows/sign-up/runs"
    await _refused_without_lag(client, path, admin, lambda _, value: {"payload": {"code": value}})


async def test_triggering_a_job_template(client: httpx.AsyncClient, auth: Token) -> None:
    admin = auth()
    job = {"name": "export", "handler": "anything", "parameters": CATASTROPHIC}
    made = await client.post("/api/v1/jobs", json=job, headers=admin)
    assert made.status_code == 201, made.text
    path = "/api/v1/jobs/export/trigger"
    await _refused_without_lag(client, path, admin, lambda _, value: {"payload": {"code": value}})


async def test_publishing_to_a_subscribed_workflow(client: httpx.AsyncClient, auth: Token) -> None:
    admin = auth()
    await _save_template(client, admin, "on-order")
    subscribed = await client.put(
        "/api/v1/events/subscriptions",
        json={"event": "order.created", "workflow": "on-order"},
        headers=admin,
    )
    assert subscribed.status_code == 200, subscribed.text
    publisher = auth(scopes=("events:write",))  # the lowest scope that reaches the check
    await _refused_without_lag(
        client,
        "/api/v1/events",
        publisher,
        lambda number, value: {
            "name": "order.created",
            "id": f"o-{number}",
            "payload": {"code": value},
        },
    )
    listed = await client.get("/api/v1/events", headers=admin)
    assert listed.json()["items"] == [], "nothing was written"


async def test_a_pattern_re2_cannot_match_in_linear_time_is_refused_when_saved(
    client: httpx.AsyncClient, auth: Token
) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": r"(a)\1"}}}
    job = {"name": "t", "handler": "anything", "parameters": schema}
    refused = await client.post("/api/v1/jobs", json=job, headers=auth())
    assert refused.status_code == 422, refused.text
    assert r"(a)\\1" in refused.json()["detail"] or r"(a)\1" in refused.json()["detail"]
    assert "RE2" in refused.json()["detail"]
