"""The web dashboard, served by ``rota server`` under ``/``: server-rendered pages
(Jinja2) with htmx for live regions, a signed session cookie, CSRF-checked forms and a
Server-Sent Events change feed. ``mount(api, context)`` adds it to the API's app;
the API keeps every path under /api/, /health, /docs and /openapi.json."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import Scope

from rota.api.context import ApiContext
from rota.api.problems import ProblemException, status_of
from rota.dashboard import actions, breakers, bulk, events, pages, queues, reads, signin
from rota.dashboard.feed import ChangeFeed
from rota.dashboard.render import HERE, environment
from rota.dashboard.sessions import Session, session_key
from rota.dashboard.web import DashboardContext, SignInRequired, page, viewer
from rota.errors import RotaError
from rota.supervise import Restarts

FEED_INTERVAL_SECONDS = 0.5  # a change shows on open pages within about a second
# The first path segments the dashboard answers (and "/"); every other path stays the
# API's, including routes added to the app after the dashboard was mounted.
SECTIONS = frozenset(
    {
        "signin",
        "signout",
        "events",
        "static",
        "runs",
        "dlq",
        "jobs",
        "workflows",
        "workers",
        "limits",
        "leader",
        "breakers",
        "queues",
        "charts",
    }
)
log = structlog.get_logger("rota.dashboard")


@dataclass
class Dashboard:
    app: FastAPI
    context: DashboardContext

    def close_streams(self) -> None:
        """End the open event streams, so a stopping server is not held up by them."""
        self.context.feed.close_streams()

    async def aclose(self) -> None:
        """Stop the change feed's poller (the server's lifespan calls this)."""
        await self.context.feed.aclose()


def mount(api: FastAPI, api_context: ApiContext, restarts: Restarts | None = None) -> Dashboard:
    """Serve the dashboard from ``api`` under ``/`` (after every API route)."""
    store_of = api_context.store
    counts = reads.ClusterCounts(store_of, api_context.clock)

    async def signature() -> object:
        return await reads.change_signature(await store_of(), api_context.clock, counts)

    context = DashboardContext(
        api=api_context,
        session_key=session_key(api_context.settings.key),
        feed=ChangeFeed(signature, FEED_INTERVAL_SECONDS, restarts or Restarts()),
        templates=environment(),
        counts=counts,
    )
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.dashboard = context
    app.state.rota = api_context  # the API's auth helpers find their context here too
    for router in (
        signin.router,
        events.router,
        bulk.router,  # before pages.router: /runs/bulk-action is not /runs/{run_id}
        actions.router,
        pages.router,
        breakers.router,
        queues.router,
    ):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    _install_error_pages(app)
    api.router.routes.append(_DashboardMount(app))
    return Dashboard(app, context)


def context_of(api: FastAPI) -> DashboardContext:
    """The dashboard mounted on ``api`` (the server and tests reach its feed here)."""
    for route in api.router.routes:
        if isinstance(route, _DashboardMount):
            return dashboard_context(route.app)
    raise LookupError("no dashboard is mounted on this app")


def close_streams(api: FastAPI) -> None:
    """End the dashboard's open event streams (``rota server`` calls this when it
    starts shutting down, before it waits for open responses to finish)."""
    context_of(api).feed.close_streams()


def dashboard_context(app: object) -> DashboardContext:
    context = app.state.dashboard  # type: ignore[attr-defined]
    assert isinstance(context, DashboardContext)
    return context


class _DashboardMount(Mount):
    """``/`` and the dashboard's sections only: the API's paths, its unknown paths and
    methods (404/405 problems) and routes added later all stay the API's."""

    def __init__(self, app: FastAPI) -> None:
        super().__init__("/", app=app, name="dashboard")

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        section = str(scope["path"]).lstrip("/").split("/", 1)[0]
        if section and section not in SECTIONS:
            return Match.NONE, {}
        return super().matches(scope)


def _install_error_pages(app: FastAPI) -> None:
    app.add_exception_handler(SignInRequired, _sign_in)
    app.add_exception_handler(RotaError, _rota_error)
    app.add_exception_handler(ProblemException, _problem)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(RequestValidationError, _invalid)


async def _error_page(request: Request, status: int, kind: str, message: str) -> Response:
    # The audit log records why a form was refused, as it does for the API: the kind
    # of problem only, never the message (it may quote what was sent).
    request.state.problem_kind = kind
    return page(
        request,
        "error.html",
        await _viewer_if_any(request),
        status=status,
        message=message,
        code=status,
    )


async def _viewer_if_any(request: Request) -> Session | None:
    """The session an error page shows its header for: the same checks as every page
    (a cookie signed out on any process shows none). The store may be what failed, so
    an error page that cannot check shows no header rather than failing again."""
    try:
        return await viewer(request)
    except SignInRequired:
        return None
    except Exception:  # noqa: BLE001 - the page must render whatever broke
        log.warning("error page: session not checked", exc_info=False)
        return None


async def _sign_in(request: Request, exc: Exception) -> Response:
    target = request.url.path if request.method == "GET" else "/"
    if request.url.query and request.method == "GET":
        target += "?" + request.url.query
    location = "/signin?next=" + quote(target, safe="")
    if request.headers.get("hx-request"):
        return HTMLResponse("", headers={"HX-Redirect": location})
    return RedirectResponse(location, status_code=303)


async def _rota_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RotaError)
    status, kind = status_of(exc)
    if status == 422:
        status = 400  # a form or filter the page shows back, not an API body
    if status >= 500:
        log.error("dashboard request failed", kind=type(exc).__name__)
        message = "the server could not answer this; try again shortly"
    else:
        message = str(exc)
    return await _error_page(request, status, kind, message)


async def _problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProblemException)
    kind = exc.kind or {401: "unauthorized", 403: "forbidden", 429: "rate-limited"}.get(
        exc.status, "error"
    )
    response = await _error_page(request, exc.status, kind, exc.detail)
    response.headers.update(exc.headers)
    return response


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        return await _error_page(request, 404, "not-found", "there is no such page")
    return await _error_page(request, exc.status_code, "error", str(exc.detail))


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    fields = ", ".join(".".join(map(str, p.get("loc", ()))) for p in exc.errors()[:5])
    return await _error_page(request, 400, "invalid-argument", f"not a valid request: {fields}")
