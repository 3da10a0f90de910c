"""The one ASGI application rota serves: ``create_api(rota_app, settings)`` puts the HTTP
API (rota.api) and the dashboard (rota.dashboard) side by side on one FastAPI app, with
their shared lifespan. It lives above both, so neither package imports the other's
assembly.

HTTP only: routes translate between JSON and the use cases in ``rota.services``; no SQL
and no business rules live here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import structlog
from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

import rota
from rota import dashboard
from rota.api import problems
from rota.api.audit import AuditMiddleware
from rota.api.auth import ScopeGuard
from rota.api.context import ApiContext
from rota.api.middleware import EdgeMiddleware
from rota.api.routes import (
    access,
    backfill,
    breakers,
    bulk,
    cluster,
    events,
    jobs,
    metrics,
    public,
    queues,
    runs,
    stats,
    webhooks,
    workflow_defs,
    workflows,
)
from rota.api.settings import ApiSettings
from rota.api.shared_limits import SharedLimits
from rota.app import App
from rota.engine.node import NodeRoles
from rota.engine.worker import default_node_id
from rota.observe.http import HttpMetrics
from rota.supervise import watched

log = structlog.get_logger("rota.api")


def create_api(rota_app: App, settings: ApiSettings) -> FastAPI:
    """The API over ``rota_app`` (its handlers, store and clock). With
    ``settings.embedded_worker`` / ``embedded_leader`` the app's lifespan also runs a
    worker / stands for leader on the server's event loop."""
    settings.check_startable()
    context = ApiContext(
        rota_app=rota_app,
        settings=settings,
        limits=SharedLimits(rota_app, settings),
    )
    if settings.uses_public_key:
        log.warning(
            "tokens are signed with the public development key: anyone can mint any "
            "token for this server; set ROTA_JWT_SECRET for anything but local development",
            env=settings.env,
        )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            async with _embedded(context):
                yield
        finally:
            await ui.aclose()  # the dashboard's change feed, before its store closes
            await rota_app.aclose()  # the store this event loop opened

    api = FastAPI(
        title="rota",
        version=rota.__version__,
        summary="A distributed job scheduler: jobs, runs, the dead-letter queue, workers.",
        lifespan=lifespan,
        redoc_url=None,
        dependencies=[Depends(problems.refuse_unknown_query)],
        generate_unique_id_function=operation_id,
    )
    api.state.rota = context
    problems.install(api)
    for router in (
        jobs.router,
        bulk.router,  # before runs.router: /runs/bulk/cancel is not /runs/{run_id}/cancel
        runs.router,
        runs.dlq,
        cluster.router,
        breakers.router,
        access.router,
        webhooks.router,
        public.health_router,
        metrics.router,
        workflows.router,
        workflow_defs.router,
        events.router,
        backfill.router,
        queues.router,
        stats.router,
    ):
        api.include_router(router)
    if settings.dev_tokens:
        api.include_router(public.dev_router)
    ui = dashboard.mount(api, context)  # "/" and its own sections; the rest stays the API's
    api.add_middleware(AuditMiddleware, context=context)
    api.add_middleware(EdgeMiddleware, body_limit_bytes=settings.body_limit_bytes)
    api.add_middleware(HttpMetrics)  # outermost: it times and counts every response
    api.openapi = lambda: _openapi(api)  # type: ignore[method-assign]
    return api


def operation_id(route: APIRoute) -> str:
    """An operation's id is its route function's name (``enqueue_run``, ``list_jobs``):
    stable and readable, so generated clients keep their method names across releases.
    Names are unique across routers (tests/api/test_openapi_document.py checks)."""
    return route.name


def api_routes(api: FastAPI) -> list[tuple[str, APIRoute]]:
    """Every API route with the path it answers on (routers included lazily too)."""
    found = []
    for context in iter_route_contexts(api.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            found.append((context.path_format or route.path_format, route))
    return found


def route_guard(route: APIRoute) -> ScopeGuard | None:
    """A route's auth rule, or None if it has none."""
    stack = list(route.dependant.dependencies)
    while stack:
        dependency = stack.pop()
        if isinstance(dependency.call, ScopeGuard):
            return dependency.call
        stack.extend(dependency.dependencies)
    return None


def route_scope(route: APIRoute) -> str | None:
    """The scope a route's guard requires, or None if it has no guard."""
    guard = route_guard(route)
    return guard.scope.value if guard is not None else None


def _openapi(api: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with problems declared as application/problem+json and each
    operation's required scope in its security requirement."""
    if api.openapi_schema:
        return api.openapi_schema
    from fastapi.openapi.utils import get_openapi

    schema = get_openapi(
        title=api.title,
        version=api.version,
        summary=api.summary,
        description=(
            "Authenticate with `Authorization: Bearer <JWT or API key>`. Each operation "
            "needs the one scope listed in its security requirement. Errors are RFC 9457 "
            "problem details (`application/problem+json`)."
        ),
        routes=api.routes,
    )
    problem_ref = "#/components/schemas/Problem"
    for path, route in api_routes(api):
        guard = route_guard(route)
        for method in route.methods or ():
            operation = schema["paths"][path][method.lower()]
            if guard is not None:
                operation["security"] = [{"HTTPBearer": [guard.scope.value]}]
                operation["x-required-scope"] = guard.scope.value
                operation["x-cluster-wide"] = guard.cluster_wide
            for response in operation.get("responses", {}).values():
                content = response.get("content", {})
                json_body = content.get("application/json", {})
                if json_body.get("schema", {}).get("$ref") == problem_ref:
                    content[problems.PROBLEM_MEDIA_TYPE] = content.pop("application/json")
    api.openapi_schema = schema
    return schema


@contextlib.asynccontextmanager
async def _embedded(context: ApiContext) -> AsyncIterator[None]:
    """Run the embedded node (a worker, a leader candidate, or both) beside the API."""
    settings, app = context.settings, context.rota_app
    if not (settings.embedded_worker or settings.embedded_leader):
        yield
        return
    await app.store()  # open and migrate before serving, so start-up errors come first
    node_id = settings.node_id or default_node_id()
    worker = None
    if settings.embedded_worker:
        worker = app.worker_options(concurrency=settings.worker_concurrency, node_id=node_id)
    node = await app.node(NodeRoles(node_id, worker, settings.embedded_leader))
    stop = asyncio.Event()
    # watched: a node that fails at start (e.g. it cannot publish its handlers' caps)
    # is logged when it happens, not only when the server stops.
    task = watched(node.run(stop), name="rota-embedded-node")
    log.info(
        "embedded duties started",
        worker=settings.embedded_worker,
        leader=settings.embedded_leader,
        node_id=node_id,
    )
    try:
        yield
    finally:
        stop.set()
        await task
