"""GET /api/v1/stats/series: the charts' series from the leader's rollup, only of the
namespaces the caller reaches, the top ones apart and the others summed; a bad range,
by or top is a 422 naming it and what is allowed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from rota.domain.runs import NewRun
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from ..contract.support import claim_one, finished, succeeded
from .conftest import Token

T0 = datetime(2030, 1, 1, 12, tzinfo=UTC)


async def _finish(store: Store, namespace: str, waited: float, failed: bool = False) -> None:
    await store.enqueue([NewRun(handler="report", payload_json="{}", namespace=namespace)], T0)
    claimed = await claim_one(store, T0 + timedelta(seconds=waited))
    outcome = (
        finished(claimed, RunState.FAILED, AttemptOutcome.FAILED) if failed else succeeded(claimed)
    )
    await store.complete([outcome], T0 + timedelta(seconds=60))


async def _rolled_up(store: Store) -> None:
    await _finish(store, "default", 0.5)
    await _finish(store, "default", 20, failed=True)
    await _finish(store, "secret", 1)
    now = T0 + timedelta(minutes=5)
    while not (await store.count_chart_batch(now)).caught_up:
        pass


async def test_series_per_handler_of_the_namespaces_the_caller_reaches(
    client: httpx.AsyncClient, auth: Token, store: Store
) -> None:
    empty = await client.get("/api/v1/stats/series", headers=auth(scopes=("jobs:read",)))
    assert empty.status_code == 200, empty.text
    assert empty.json()["series"] == []
    assert empty.json()["counted_until"] is None
    await _rolled_up(store)
    reader = auth(scopes=("jobs:read",), namespaces=("default",))
    response = await client.get(
        "/api/v1/stats/series", params={"range": "1h", "by": "handler"}, headers=reader
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["range"], body["by"], body["bucket_seconds"]) == ("1h", "handler", 60)
    [only] = body["series"]
    assert (only["namespace"], only["key"], only["finished"], only["failures"]) == (
        "default",
        "report",
        2,
        1,
    )
    assert len(only["points"]) == 60
    [bar] = [p for p in only["points"] if p["finished"]]
    assert (bar["succeeded"], bar["failures"]) == (1, 1)
    assert bar["delay_mean_seconds"] == pytest.approx(10.25)
    assert (bar["delay_p50_seconds"], bar["delay_p99_seconds"]) == (1.0, 60.0)
    everyone = await client.get(
        "/api/v1/stats/series", params={"range": "7d"}, headers=auth(scopes=("jobs:read",))
    )
    assert [(s["namespace"], s["key"]) for s in everyone.json()["series"]] == [
        ("default", "default"),  # most runs first
        ("secret", "default"),
    ]
    assert everyone.json()["other"] is None


async def test_past_the_top_the_series_come_summed_as_other(
    client: httpx.AsyncClient, auth: Token, store: Store
) -> None:
    await _rolled_up(store)
    response = await client.get(
        "/api/v1/stats/series", params={"top": 1}, headers=auth(scopes=("jobs:read",))
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["top"] == 1
    assert [(s["namespace"], s["finished"]) for s in body["series"]] == [("default", 2)]
    other = body["other"]
    assert (other["keys"], other["finished"], other["failures"], len(other["points"])) == (
        1,
        1,
        0,
        60,
    )
    everything = await client.get(
        "/api/v1/stats/series", params={"top": 0}, headers=auth(scopes=("jobs:read",))
    )
    assert everything.json()["series"] == []
    assert sum(p["finished"] for p in everything.json()["other"]["points"]) == 3


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"range": "2h"}, "invalid range: '2h'; expected one of '1h', '24h', '7d'"),
        ({"by": "worker"}, "invalid by: 'worker'; expected one of 'queue', 'handler'"),
        ({"top": "101"}, "invalid request: query.top: Input should be less than or equal to 100"),
        ({"top": "-1"}, "invalid request: query.top: Input should be greater than or equal to 0"),
    ],
)
async def test_a_bad_value_is_a_problem_naming_it_and_what_is_allowed(
    client: httpx.AsyncClient, admin: dict[str, str], params: dict[str, str], named: str
) -> None:
    response = await client.get("/api/v1/stats/series", params=params, headers=admin)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["detail"] == named


async def test_a_token_without_read_is_refused(client: httpx.AsyncClient, auth: Token) -> None:
    response = await client.get("/api/v1/stats/series", headers=auth(scopes=("events:write",)))
    assert response.status_code == 403
