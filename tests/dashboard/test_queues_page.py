"""The queues page (issue 29): what it shows, a cluster admin's pause, resume and cap
(CSRF, audit under the API's names, bad input named), what a viewer and a team's admin
may not do, and the overview's paused flag; over HTTP against the real app on SQLite
and PostgreSQL."""

from __future__ import annotations

import httpx

import rota
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest
from tests.api.conftest import ADMIN

from .conftest import VIEWER, SignedIn, bearer, csrf_of, sign_in, token


async def _seed(app: rota.App) -> None:
    """mail: one failed, one pending."""
    store = await app.store()
    await store.enqueue([NewRun("send", "{}", queue="mail") for _ in range(2)], None)
    [run] = await store.claim(ClaimRequest("w", ("mail",), 1, 30.0, ()), None)
    failed = Outcome(run.run_id, run.fence, RunState.FAILED, AttemptOutcome.FAILED)
    await store.complete([failed], None)


async def _audit(client: httpx.AsyncClient, action: str) -> list[str]:
    answer = await client.get("/api/v1/audit?limit=200", headers=bearer(token()))
    assert answer.status_code == 200, answer.text
    return [e["outcome"] for e in answer.json()["items"] if e["action"] == action]


async def test_a_viewer_sees_depth_and_failure_rate_and_no_buttons(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    await _seed(rota_app)
    client = await signed_in(VIEWER)
    page = await client.get("/queues")
    assert page.status_code == 200, page.text[:300]
    text = page.text
    assert '<a href="/queues" aria-current="page">' in text
    assert ">mail</a>" in text
    assert "100.0 %" in text  # one finished, and it failed
    assert "● active" in text
    assert "<button" not in text.split("<main", 1)[1].replace('type="submit">Sign out', ""), (
        "a viewer sees no action buttons"
    )


async def test_a_cluster_admin_pauses_caps_and_resumes_with_csrf_and_audit(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    await _seed(rota_app)
    client = await signed_in(ADMIN)
    page = await client.get("/queues")
    assert "Pause queue mail" in page.text
    forged = await client.post("/queues/mail/pause", data={"csrf": "forged"})
    assert forged.status_code == 403
    done = await client.post("/queues/mail/pause", data={"csrf": csrf_of(page)})
    assert done.headers["location"] == "/queues?notice=queue-paused"
    after = (await client.get(done.headers["location"])).text
    assert "Queue paused" in after
    assert "◐ paused" in after
    assert "Resume queue mail" in after
    assert await (await rota_app.store()).paused_queues() == frozenset({"mail"})
    overview = (await client.get("/")).text
    assert "Paused (claims skip them)" in overview
    capped = await client.post(
        "/queues/mail/limit", data={"csrf": csrf_of(page), "max_running": "3"}
    )
    assert capped.headers["location"] == "/queues?notice=queue-limit-set"
    limits = await (await rota_app.store()).list_limits()
    assert [(x.name, x.max_running) for x in limits] == [("mail", 3)]
    bad = await client.post("/queues/mail/limit", data={"csrf": csrf_of(page), "max_running": "-1"})
    assert bad.status_code == 400
    assert "-1" in bad.text
    bad_name = await client.post("/queues/no%20spaces/pause", data={"csrf": csrf_of(page)})
    assert bad_name.status_code == 400
    assert "no spaces" in bad_name.text
    resumed = await client.post("/queues/mail/resume", data={"csrf": csrf_of(page)})
    assert resumed.headers["location"] == "/queues?notice=queue-resumed"
    assert await (await rota_app.store()).paused_queues() == frozenset()
    assert sorted(await _audit(client, "pause_queue")) == ["denied", "ok", "rejected"]
    assert sorted(await _audit(client, "set_queue_limit")) == ["ok", "rejected"]


async def test_a_teams_admin_may_not_pause_a_queue(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN)
    team = await sign_in(client, token(ADMIN, ("team-a",)))
    assert team.status_code == 303
    page = await client.get("/queues")
    assert "Pause queue" not in page.text
    refused = await client.post("/queues/mail/pause", data={"csrf": csrf_of(page)})
    assert refused.status_code == 403
    assert "acts on the whole cluster" in refused.text
