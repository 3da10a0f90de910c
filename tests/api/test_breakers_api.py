"""/api/v1/breakers: visible to readers, reset by a cluster admin (both stores)."""

from __future__ import annotations

import httpx

import rota
from rota.domain.breakers import Breaker
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest
from tests.api.conftest import Token


async def _trip(app: rota.App) -> None:
    store = await app.store()
    await store.set_breaker_rule("report", Breaker(failures=1, cool_down=3600))
    await store.enqueue([NewRun("report", "{}")], None)
    [run] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0, ()), None)
    await store.complete(
        [Outcome(run.run_id, run.fence, RunState.FAILED, AttemptOutcome.FAILED)], None
    )


async def test_an_open_breaker_is_listed_and_reset_by_an_admin_only(
    rota_app: rota.App, client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    await _trip(rota_app)
    reader = auth(scopes=("jobs:read",))
    listed = (await client.get("/api/v1/breakers", headers=reader)).json()
    [breaker] = listed["items"]
    assert (breaker["handler"], breaker["key"], breaker["state"]) == ("report", "", "open")
    assert listed["transitions"][0]["cause"] == "1 consecutive failures within 60s"
    refused = await client.post("/api/v1/breakers/report/reset", headers=reader)
    assert refused.status_code == 403
    reset = await client.post("/api/v1/breakers/report/reset", headers=admin)
    assert reset.status_code == 200, reset.text
    assert reset.json()["state"] == "closed"
    again = (await client.get("/api/v1/breakers", headers=reader)).json()
    assert again["items"][0]["state"] == "closed"
    assert again["transitions"][0]["cause"] == "reset by an operator"


async def test_resetting_an_unknown_breaker_is_a_clear_client_error(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    response = await client.post("/api/v1/breakers/nobody/reset?key=x", headers=admin)
    assert 400 <= response.status_code < 500
    assert "nobody:x" in response.text


async def test_runs_enqueued_over_the_api_carry_their_breaker_key(
    rota_app: rota.App, client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    store = await rota_app.store()
    await store.set_breaker_rule("report", Breaker(failures=1, cool_down=3600))
    body = {"handler": "report", "payload": {"day": "mon"}, "breaker_key": "psp-a"}
    tripping = await client.post("/api/v1/runs", json=body, headers=admin)
    assert tripping.status_code == 201, tripping.text
    claim = ClaimRequest("w", ("default",), 10, 30.0, ())
    [run] = await store.claim(claim, None)
    await store.complete(
        [Outcome(run.run_id, run.fence, RunState.FAILED, AttemptOutcome.FAILED)], None
    )
    held = await client.post("/api/v1/runs", json=body, headers=admin)
    other = await client.post(
        "/api/v1/runs", json={**body, "breaker_key": "psp-b", "rate_key": "r"}, headers=admin
    )
    claimed = {c.run_id for c in await store.claim(claim, None)}
    assert claimed == {other.json()["run_id"]}, "psp-a is open; psp-b is not"
    assert held.json()["run_id"] not in claimed
    bad = await client.post("/api/v1/runs", json={**body, "rate_key": "no spaces"}, headers=admin)
    assert bad.status_code == 422


async def test_the_current_failure_rate_window_is_listed(
    rota_app: rota.App, client: httpx.AsyncClient, auth: Token
) -> None:
    store = await rota_app.store()
    await store.set_breaker_rule("report", Breaker(failure_rate=0.5, min_calls=10, window=3600))
    for state, outcome in (
        (RunState.FAILED, AttemptOutcome.FAILED),
        (RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED),
        (RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED),
    ):
        await store.enqueue([NewRun("report", "{}")], None)
        [run] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0, ()), None)
        await store.complete([Outcome(run.run_id, run.fence, state, outcome)], None)
    listed = await client.get("/api/v1/breakers", headers=auth(scopes=("jobs:read",)))
    [breaker] = listed.json()["items"]
    assert (breaker["state"], breaker["cause"]) == ("closed", None)
    assert (breaker["window_calls"], breaker["window_failures"]) == (3, 1)
    assert breaker["window_started_at"] is not None


async def test_a_team_sees_only_the_breakers_its_runs_moved(
    rota_app: rota.App, client: httpx.AsyncClient, auth: Token
) -> None:
    """Issue 31: team-b's reader saw the breaker team-a's runs opened (its key and
    causes). Breakers are listed to the namespaces whose runs moved them."""
    store = await rota_app.store()
    await store.set_breaker_rule("report", Breaker(failures=1, cool_down=3600))
    await store.enqueue([NewRun("report", "{}", namespace="team-a", breaker_key="acme")], None)
    [run] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0, ()), None)
    await store.complete(
        [Outcome(run.run_id, run.fence, RunState.FAILED, AttemptOutcome.FAILED)], None
    )
    team_a = auth(scopes=("jobs:read",), namespaces=("team-a",))
    team_b = auth(scopes=("jobs:admin", "jobs:read"), namespaces=("team-b",))
    seen_by_a = (await client.get("/api/v1/breakers", headers=team_a)).json()
    assert [b["key"] for b in seen_by_a["items"]] == ["acme"]
    assert len(seen_by_a["transitions"]) == 1
    seen_by_b = (await client.get("/api/v1/breakers", headers=team_b)).json()
    assert seen_by_b == {"items": [], "transitions": []}
    everyone = (await client.get("/api/v1/breakers", headers=auth())).json()
    assert [b["key"] for b in everyone["items"]] == ["acme"]
