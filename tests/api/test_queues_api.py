"""/api/v1/queues (issue 29): depth, recent throughput and failure rate and workers per
queue for readers; pause, resume and a live concurrency limit for a cluster admin only,
audited; bad input named in a 4xx problem, never a 500. On both stores."""

from __future__ import annotations

import httpx

import rota
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.workers import WorkerInfo
from rota.store.port import ClaimRequest
from tests.api.conftest import Token


async def _seed(app: rota.App) -> None:
    """mail: one failed, one succeeded, one pending; a worker serves mail and default."""
    store = await app.store()
    await store.enqueue([NewRun("send", "{}", queue="mail") for _ in range(3)], None)
    one, two = await store.claim(ClaimRequest("w", ("mail",), 2, 30.0, ()), None)
    await store.complete(
        [
            Outcome(one.run_id, one.fence, RunState.FAILED, AttemptOutcome.FAILED),
            Outcome(two.run_id, two.fence, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED),
        ],
        None,
    )
    worker = WorkerInfo("node-a", "host", 1, "0", ("mail", "default"), (), 4)
    await store.register_worker(worker, None)


def _by_name(listing: httpx.Response) -> dict[str, dict[str, object]]:
    assert listing.status_code == 200, listing.text
    return {q["name"]: q for q in listing.json()["items"]}


async def test_a_reader_sees_depth_throughput_failure_rate_and_workers(
    rota_app: rota.App, client: httpx.AsyncClient, auth: Token
) -> None:
    await _seed(rota_app)
    reader = auth(scopes=("jobs:read",))
    mail = _by_name(await client.get("/api/v1/queues", headers=reader))["mail"]
    assert mail["depth"] == {"pending": 1, "retrying": 0, "claimed": 0, "running": 0}
    assert mail["finished"] == 2
    assert mail["failure_rate"] == 0.5
    assert mail["throughput_per_minute"] > 0
    assert mail["workers"] == ["node-a"]
    assert mail["paused"] is False
    assert mail["concurrency_limit"] is None
    assert isinstance(mail["oldest_due_age_seconds"], float)
    one = await client.get("/api/v1/queues/mail", headers=reader)
    assert one.json()["finished"] == 2
    unused = (await client.get("/api/v1/queues/nothing-here", headers=reader)).json()
    assert unused["depth"]["pending"] == 0
    assert unused["failure_rate"] is None


async def test_a_team_reader_counts_only_its_namespaces_runs(
    rota_app: rota.App, client: httpx.AsyncClient, auth: Token
) -> None:
    await _seed(rota_app)
    team = auth(scopes=("jobs:read",), namespaces=("team-b",))
    mail = _by_name(await client.get("/api/v1/queues", headers=team))["mail"]
    assert mail["depth"]["pending"] == 0
    assert mail["finished"] == 0


async def test_pause_and_resume_need_a_cluster_admin_and_are_audited(
    rota_app: rota.App, client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    await _seed(rota_app)
    reader = auth(scopes=("jobs:read",))
    refused = await client.post("/api/v1/queues/mail/pause", headers=reader)
    assert refused.status_code == 403
    team_admin = auth(scopes=("jobs:admin", "jobs:read"), namespaces=("default",))
    assert (await client.post("/api/v1/queues/mail/pause", headers=team_admin)).status_code == 403
    paused = await client.post("/api/v1/queues/mail/pause", headers=admin)
    assert paused.status_code == 200, paused.text
    assert paused.json()["paused"] is True
    assert paused.json()["paused_by"]
    assert paused.json()["paused_at"]
    store = await rota_app.store()
    assert await store.claim(ClaimRequest("w", ("mail",), 5, 30.0, ()), None) == []
    resumed = await client.post("/api/v1/queues/mail/resume", headers=admin)
    assert resumed.json()["paused"] is False
    audit = (await client.get("/api/v1/audit?limit=100", headers=admin)).json()["items"]
    actions = sorted((e["action"], e["outcome"]) for e in audit if "queue" in e["action"])
    assert actions == [
        ("pause_queue", "denied"),
        ("pause_queue", "denied"),
        ("pause_queue", "ok"),
        ("resume_queue", "ok"),
    ]
    assert {e["target"] for e in audit if e["outcome"] == "ok"} == {"queue mail"}


async def test_a_concurrency_limit_is_set_live_and_removed(
    rota_app: rota.App, client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    put = await client.put(
        "/api/v1/queues/mail/concurrency-limit", json={"max_running": 3}, headers=admin
    )
    assert put.status_code == 200, put.text
    assert put.json()["concurrency_limit"] == 3
    limits = await (await rota_app.store()).list_limits()
    assert [(str(x.scope.value), x.name, x.max_running) for x in limits] == [("queue", "mail", 3)]
    cleared = await client.put(
        "/api/v1/queues/mail/concurrency-limit", json={"max_running": None}, headers=admin
    )
    assert cleared.json()["concurrency_limit"] is None


async def test_bad_input_is_a_clear_4xx_naming_the_value(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    negative = await client.put(
        "/api/v1/queues/mail/concurrency-limit", json={"max_running": -2}, headers=admin
    )
    assert negative.status_code == 422, negative.text
    assert "-2" in negative.json()["detail"]
    assert ">= 1" in negative.json()["detail"]
    bad_name = await client.post("/api/v1/queues/bad%20name!/pause", headers=admin)
    assert bad_name.status_code == 422, bad_name.text
    assert "'bad name!'" in bad_name.json()["detail"]
    assert "letters, digits" in bad_name.json()["detail"]
    reading = await client.get("/api/v1/queues/%20", headers=admin)
    assert reading.status_code == 422
    extra = await client.put(
        "/api/v1/queues/mail/concurrency-limit", json={"max_running": 2, "x": 1}, headers=admin
    )
    assert extra.status_code == 422
