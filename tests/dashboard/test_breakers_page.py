"""The breakers and rates page: what it shows, a cluster admin's reset and rate edits
(CSRF, audit under the API's names, bad input named), and what others may not do;
over HTTP against the real app on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

import rota
from rota.domain.breakers import Breaker
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest
from tests.api.conftest import ADMIN

from .conftest import VIEWER, SignedIn, bearer, csrf_of, sign_in, token

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)


async def _trip(app: rota.App) -> None:
    """Two failures of "charge" on host-a: its breaker opens."""
    store = await app.store()
    await store.set_breaker_rule("charge", Breaker(failures=2, failure_rate=0.9, min_calls=5))
    for second in (0, 1):
        now = T0 + timedelta(seconds=second)
        run = NewRun(handler="charge", payload_json="{}", breaker_key="host-a")
        await store.enqueue([run], now)
        [claimed] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0), now)
        failed = Outcome(claimed.run_id, claimed.fence, RunState.FAILED, AttemptOutcome.FAILED)
        await store.complete([failed], now)


async def _audit(client: httpx.AsyncClient, action: str) -> list[str]:
    answer = await client.get("/api/v1/audit?limit=200", headers=bearer(token()))
    assert answer.status_code == 200, answer.text
    return [e["outcome"] for e in answer.json()["items"] if e["action"] == action]


async def test_the_page_shows_state_counts_rules_and_transitions(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    await _trip(rota_app)
    client = await signed_in(VIEWER)
    page = await client.get("/breakers")
    assert page.status_code == 200, page.text[:300]
    text = page.text
    assert '<a href="/breakers" aria-current="page">' in text
    assert "host-a" in text
    assert "state-open" in text
    assert "2 consecutive failures within 60s" in text
    assert "2 / 2 since" not in text, "the window starts afresh when it opens"
    assert "2 failures in a row within 60.0 s" in text
    assert "a failure rate of 0.9 over 60.0 s (at least 5 outcomes)" in text
    assert "Reset" not in text, "a viewer sees no reset button"
    assert "Save rate" not in text


async def test_a_cluster_admin_resets_a_breaker_with_csrf_and_audit(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    await _trip(rota_app)
    client = await signed_in(ADMIN)
    page = await client.get("/breakers")
    form = {"handler": "charge", "key": "host-a"}
    forged = await client.post("/breakers/reset", data={**form, "csrf": "forged"})
    assert forged.status_code == 403
    done = await client.post("/breakers/reset", data={**form, "csrf": csrf_of(page)})
    assert done.headers["location"] == "/breakers?notice=breaker-reset"
    after = (await client.get(done.headers["location"])).text
    assert "Breaker closed" in after
    assert "reset by an operator" in after
    [row] = await (await rota_app.store()).list_breakers()
    assert row.state.value == "closed"
    unknown = await client.post(
        "/breakers/reset", data={"handler": "nope", "key": "", "csrf": csrf_of(page)}
    )
    assert unknown.status_code == 400
    assert "nope:" in unknown.text
    assert sorted(await _audit(client, "reset_breaker")) == ["denied", "ok", "rejected"]


async def test_rates_are_edited_by_a_cluster_admin_only(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN)
    csrf = csrf_of(await client.get("/breakers"))
    saved = await client.post(
        "/breakers/rates",
        data={"csrf": csrf, "scope": "handler", "name": "mail", "rate": "100/minute"},
    )
    assert saved.headers["location"] == "/breakers?notice=rate-set"
    assert "100/minute" in (await client.get("/breakers")).text
    bad = await client.post(
        "/breakers/rates",
        data={"csrf": csrf, "scope": "handler", "name": "mail", "rate": "10/fortnight"},
    )
    assert bad.status_code == 400
    assert "10/fortnight" in bad.text
    team = await sign_in(client, token(ADMIN, ("team-a",)))  # an admin of one namespace
    assert team.status_code == 303
    page = await client.get("/breakers")
    assert "Save rate" not in page.text
    refused = await client.post(
        "/breakers/rates/clear", data={"csrf": csrf_of(page), "scope": "handler", "name": "mail"}
    )
    assert refused.status_code == 403
    assert "acts on the whole cluster" in refused.text
    await sign_in(client, token(ADMIN))
    cleared = await client.post(
        "/breakers/rates/clear",
        data={"csrf": csrf_of(await client.get("/breakers")), "scope": "handler", "name": "mail"},
    )
    assert cleared.headers["location"] == "/breakers?notice=rate-cleared"
    assert "No rate limits." in (await client.get("/breakers")).text
    assert sorted(await _audit(client, "set_rate")) == ["ok", "rejected"]


async def test_the_page_shows_a_team_only_the_breakers_its_runs_moved(
    rota_app: rota.App, signed_in: SignedIn
) -> None:
    """Issue 31: the breakers of "default" (host-a, opened above) are not team-b's."""
    await _trip(rota_app)
    client = await signed_in(VIEWER, ("team-b",))
    page = await client.get("/breakers")
    assert page.status_code == 200
    assert "host-a" not in page.text
    client.cookies.clear()
    client = await signed_in(VIEWER, ("default",))
    assert "host-a" in (await client.get("/breakers")).text
