"""GET /metrics on `rota server`: who may scrape, and what a caller limited to some
namespaces sees (only their namespaces' cluster gauges). HTTP requests are counted by
route template, never by raw path."""

from __future__ import annotations

import httpx
import pytest

import rota
from rota.asgi import create_api
from rota.domain.breakers import BreakerRow, BreakerState
from rota.domain.runs import NewRun
from rota.errors import InvalidArgument
from rota.observe import hooks

from .conftest import Token, api_settings, serving

SCRAPE_TOKEN = "scrape-token-0123456789-abcdefghijklmnop"


async def _seed_and_publish(rota_app: rota.App) -> None:
    store = await rota_app.store()
    await store.enqueue(
        [
            NewRun(handler="report", payload_json="1", queue="q-team-a", namespace="team-a"),
            NewRun(handler="report", payload_json="1", queue="q-team-b", namespace="team-b"),
        ],
        None,
    )
    await hooks.publish_cluster_gauges(store, rota_app.clock)


async def test_scraping_needs_metrics_read(client: httpx.AsyncClient, auth: Token) -> None:
    assert (await client.get("/metrics")).status_code == 401
    refused = await client.get("/metrics", headers=auth(scopes=("jobs:read",)))
    assert refused.status_code == 403
    assert "metrics:read" in refused.json()["detail"]
    scraped = await client.get("/metrics", headers=auth(scopes=("metrics:read",)))
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    assert "rota_runs_enqueued_total" in scraped.text


async def test_a_namespace_limited_caller_sees_only_its_namespaces(
    rota_app: rota.App, client: httpx.AsyncClient, auth: Token
) -> None:
    await _seed_and_publish(rota_app)
    full = await client.get("/metrics", headers=auth(scopes=("metrics:read",)))
    assert "q-team-a" in full.text
    assert "q-team-b" in full.text
    limited = await client.get(
        "/metrics", headers=auth(scopes=("metrics:read",), namespaces=("team-a",))
    )
    assert limited.status_code == 200
    assert "q-team-a" in limited.text
    assert "q-team-b" not in limited.text
    assert "team-b" not in limited.text
    assert "rota_http_requests_total" not in limited.text
    hooks.OBSERVER.cluster.clear()


async def test_the_scrape_token_sees_everything(rota_app: rota.App) -> None:
    api = create_api(rota_app, api_settings(metrics_token=SCRAPE_TOKEN))
    async with serving(api) as client:
        ok = await client.get("/metrics", headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"})
        assert ok.status_code == 200
        assert "rota_http_requests_total" in ok.text
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer wrong"})
        assert wrong.status_code == 401


def test_a_short_scrape_token_is_refused_without_echoing_it() -> None:
    with pytest.raises(InvalidArgument) as caught:
        api_settings(metrics_token="short-token")
    assert "ROTA_METRICS_TOKEN" in str(caught.value)
    assert "short-token" not in str(caught.value)


async def test_requests_are_counted_by_route_template(
    client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    await client.get("/api/v1/runs/424242", headers=admin)
    await client.get("/no/such/path/123")
    scraped = (await client.get("/metrics", headers=auth(scopes=("metrics:read",)))).text
    assert 'route="/api/v1/runs/{run_id}"' in scraped
    assert "424242" not in scraped
    assert 'route="unmatched"' in scraped
    assert "/no/such/path" not in scraped


async def test_breaker_gauges_go_to_callers_who_reach_every_namespace_only(
    client: httpx.AsyncClient, auth: Token
) -> None:
    """rota_breakers_open names handlers of every namespace (a breaker is shared): it
    is a process series, never in a namespace-limited scrape (issue 31)."""
    hooks.breakers_seen([BreakerRow("charge-team-a", "", BreakerState.OPEN)])
    try:
        full = await client.get("/metrics", headers=auth(scopes=("metrics:read",)))
        assert 'rota_breakers_open{handler="charge-team-a"} 1.0' in full.text
        limited = await client.get(
            "/metrics", headers=auth(scopes=("metrics:read",), namespaces=("team-b",))
        )
        assert limited.status_code == 200
        assert "rota_breakers_open" not in limited.text
        assert "charge-team-a" not in limited.text
    finally:
        hooks.breakers_seen([])
