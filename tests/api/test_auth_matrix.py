"""The auth matrix, generated from the app's own routes: every route but the public ones
needs a token, and each scope reaches exactly the routes that name it (403 elsewhere).
A route added without an auth rule fails here."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

import rota
from rota.asgi import api_routes as all_routes
from rota.asgi import route_guard, route_scope
from rota.domain.access import ROLE_SCOPES, Role, Scope

from .conftest import Token

# The only routes without a token (FastAPI's own /openapi.json and /docs are not
# APIRoutes and are checked separately below).
PUBLIC = {("GET", "/health/live"), ("GET", "/health/ready"), ("POST", "/dev/token")}


def api_routes(api: FastAPI) -> list[tuple[str, str, APIRoute]]:
    routes = [
        (method, path, route)
        for path, route in all_routes(api)
        for method in sorted(route.methods or ())
    ]
    assert len(routes) > 20, "the routes were not found"
    return routes


def concrete(path: str) -> str:
    """A request path for a route: ids become 1, names become a plausible name."""
    path = re.sub(r"\{run_id\}", "1", path)
    path = re.sub(r"\{key_id\}", "0123456789abcdef", path)
    return re.sub(r"\{[a-z_]+\}", "some-name", path)


def test_every_route_has_an_auth_rule(api: FastAPI) -> None:
    unguarded = [
        (method, path)
        for method, path, route in api_routes(api)
        if route_scope(route) is None and (method, path) not in PUBLIC
    ]
    assert unguarded == [], f"routes without an auth rule: {unguarded}"
    assert {(m, p) for m, p, r in api_routes(api) if route_scope(r) is None} == PUBLIC


def test_openapi_declares_each_routes_scope(api: FastAPI) -> None:
    document = api.openapi()
    for method, path, route in api_routes(api):
        operation = document["paths"][path][method.lower()]
        if (method, path) in PUBLIC:
            assert "security" not in operation
            continue
        assert operation["security"] == [{"HTTPBearer": [route_scope(route)]}]
        for status in ("401", "403", "422", "429"):
            content = operation["responses"][status]["content"]
            assert list(content) == ["application/problem+json"], (method, path, status)


async def test_without_a_token_every_guarded_route_is_401(
    api: FastAPI, client: httpx.AsyncClient
) -> None:
    for method, path, _route in api_routes(api):
        if (method, path) in PUBLIC:
            continue
        response = await client.request(method, concrete(path))
        assert response.status_code == 401, (method, path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"].startswith("Bearer")
    for public in ("/health/live", "/openapi.json", "/docs"):
        assert (await client.get(public)).status_code == 200, public


@pytest.mark.parametrize("held", list(Scope), ids=lambda s: s.value)
async def test_each_scope_reaches_exactly_its_routes(
    held: Scope, api: FastAPI, client: httpx.AsyncClient, auth: Token
) -> None:
    headers = auth(scopes=(held.value,))
    for method, path, route in api_routes(api):
        needed = route_scope(route)
        if needed is None:
            continue
        response = await client.request(method, concrete(path), headers=headers)
        if needed == held.value:
            assert response.status_code not in (401, 403), (method, path, response.text)
        else:
            assert response.status_code == 403, (method, path, response.text)
            assert needed in response.json()["detail"]


# Routes whose effect reaches every namespace; they need a caller who reaches every one.
CLUSTER_WIDE = {
    ("POST", "/api/v1/workers/{node_id}/drain"),
    ("POST", "/api/v1/workers/{node_id}/resume"),
    ("POST", "/api/v1/breakers/{handler}/reset"),
    ("POST", "/api/v1/queues/{name}/pause"),
    ("POST", "/api/v1/queues/{name}/resume"),
    ("PUT", "/api/v1/queues/{name}/concurrency-limit"),
}


def cluster_wide(route: APIRoute) -> bool:
    guard = route_guard(route)
    return guard is not None and guard.cluster_wide


def test_cluster_wide_routes_are_exactly_the_cluster_actions(api: FastAPI) -> None:
    marked = {(m, p) for m, p, r in api_routes(api) if cluster_wide(r)}
    assert marked == CLUSTER_WIDE
    document = api.openapi()
    for method, path in CLUSTER_WIDE:
        assert document["paths"][path][method.lower()]["x-cluster-wide"] is True


@pytest.mark.parametrize("reach", [("team-a",), ("team-a", "default")], ids=["one", "two"])
async def test_a_namespaced_principal_reaches_all_but_the_cluster_wide_routes(
    reach: tuple[str, ...], api: FastAPI, client: httpx.AsyncClient, auth: Token
) -> None:
    """Every scope held, but only some namespaces: each route answers as it would for
    anyone (its own 2xx/4xx), except the cluster-wide ones, which are 403."""
    headers = auth(scopes=tuple(s.value for s in Scope), namespaces=reach)
    for method, path, route in api_routes(api):
        if route_scope(route) is None:
            continue
        response = await client.request(method, concrete(path), headers=headers)
        if (method, path) in CLUSTER_WIDE:
            assert response.status_code == 403, (method, path, response.text)
            assert "whole cluster" in response.json()["detail"]
        else:
            assert response.status_code not in (401, 403), (method, path, response.text)


async def test_a_namespaced_admin_cannot_drain_a_worker(
    rota_app: rota.App, client: httpx.AsyncClient, admin: dict[str, str], auth: Token
) -> None:
    from rota.domain.workers import WorkerInfo, WorkerState

    store = await rota_app.store()
    await store.register_worker(
        WorkerInfo("w1", "host-a", 123, "0.1.0", ("default",), (), 8), rota_app.clock.db_now()
    )
    team_admin = auth(scopes=("jobs:admin",), namespaces=("team-a",))
    for action in ("drain", "resume"):
        refused = await client.post(f"/api/v1/workers/w1/{action}", headers=team_admin)
        assert refused.status_code == 403, refused.text
    [worker] = await store.list_workers()
    assert worker.state == WorkerState.ACTIVE
    drained = await client.post("/api/v1/workers/w1/drain", headers=admin)
    assert (drained.status_code, drained.json()["state"]) == (202, "draining")
    resumed = await client.post("/api/v1/workers/w1/resume", headers=admin)
    assert (resumed.status_code, resumed.json()["state"]) == (200, "active")


def test_roles_map_to_scopes() -> None:
    assert ROLE_SCOPES[Role.VIEWER] == {Scope.READ}
    # Publishing an event makes runs happen, as triggering does: operators may.
    assert ROLE_SCOPES[Role.OPERATOR] == {Scope.READ, Scope.TRIGGER, Scope.MANAGE, Scope.EVENTS}
    assert ROLE_SCOPES[Role.ADMIN] == set(Scope)


async def test_a_role_in_the_token_grants_its_scopes(
    client: httpx.AsyncClient, api: FastAPI
) -> None:
    from datetime import UTC, datetime

    from rota.api.auth import mint_token

    from .conftest import api_settings

    token = mint_token(api_settings(), "viewer-1", datetime.now(UTC), roles=["viewer"])
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/api/v1/jobs", headers=headers)).status_code == 200
    denied = await client.post("/api/v1/jobs/x/trigger", headers=headers)
    assert denied.status_code == 403
