"""What every dashboard route shares: its context, the signed-in viewer, the CSRF
check, the permission check (the API's own guards) and rendering a page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment

from rota.api.auth import CLUSTER_ADMIN_GUARD, GUARDS
from rota.api.context import ApiContext
from rota.api.problems import ProblemException
from rota.dashboard.feed import ChangeFeed
from rota.dashboard.reads import ClusterCounts
from rota.dashboard.sessions import COOKIE, Session, decode
from rota.domain.access import Principal, Scope
from rota.domain.values import TEXT_RULE, text_problem, whole_number
from rota.errors import InvalidArgument
from rota.store.port import Store

CSRF_FIELD = "csrf"
# The dashboard's pages load only their own script and stylesheet.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
# No dashboard form comes near these (the bulk form: 500 run ids, ~10 KiB); a body past
# them is refused before it is parsed.
MAX_FORM_VALUES = 600
MAX_FORM_BYTES = 64 * 1024


@dataclass
class DashboardContext:
    api: ApiContext
    session_key: bytes
    feed: ChangeFeed
    templates: Environment
    counts: ClusterCounts

    async def store(self) -> Store:
        return await self.api.store()


class SignInRequired(Exception):
    """No valid session: the viewer is sent to the sign-in page."""


def dashboard(request: Request) -> DashboardContext:
    return cast(DashboardContext, request.app.state.dashboard)


async def viewer(request: Request) -> Session:
    """The session the cookie proves; SignInRequired when there is none (missing,
    forged, expired, signed out on any server process, or its API key was revoked)."""
    context = dashboard(request)
    session = decode(request.cookies.get(COOKIE), context.session_key, context.api.clock.now())
    if session is None:
        raise SignInRequired
    store = await context.store()
    if await store.session_signed_out(session.session_id):  # one primary-key read
        raise SignInRequired
    if session.api_key_id is not None:
        key = await store.get_api_key(session.api_key_id)
        if key is None or not key.active:
            raise SignInRequired
    request.state.principal = session.principal  # for the audit log, as the API does
    return session


def permissions(principal: Principal) -> dict[str, bool]:
    """Which buttons to show: exactly the checks the actions make."""
    allowed = {}
    for name, guard in (
        ("trigger", GUARDS[Scope.TRIGGER]),
        ("manage", GUARDS[Scope.MANAGE]),
        ("admin", GUARDS[Scope.ADMIN]),
        ("cluster_admin", CLUSTER_ADMIN_GUARD),
    ):
        try:
            guard.check(principal)
            allowed[name] = True
        except ProblemException:
            allowed[name] = False
    return allowed


def require(principal: Principal, scope: Scope, cluster_wide: bool = False) -> None:
    """403, worded as the API words it, unless ``principal`` may do this."""
    (CLUSTER_ADMIN_GUARD if cluster_wide else GUARDS[scope]).check(principal)


async def form(request: Request) -> dict[str, list[str]]:
    """An urlencoded form body, or a 400/413 problem saying what is wrong with it: the
    one reader of every form, signed in or not, so no malformed or over-large body
    reaches a route (nor a traceback the log)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise ProblemException(
                413, f"the form is larger than {MAX_FORM_BYTES} bytes", kind="too-large"
            )
    try:
        text = body.decode("utf-8")
        fields = parse_qs(
            text, keep_blank_values=True, errors="strict", max_num_fields=MAX_FORM_VALUES
        )
    except UnicodeDecodeError:
        raise ProblemException(400, "the form is not UTF-8 text", kind="invalid-form") from None
    except ValueError:  # parse_qs: more than max_num_fields
        raise ProblemException(
            413, f"the form has too many fields (at most {MAX_FORM_VALUES})", kind="too-large"
        ) from None
    for name, values in fields.items():
        if any(text_problem(item) for item in (name, *values)):
            raise ProblemException(
                400, f"every form field must be {TEXT_RULE}", kind="invalid-form"
            )
    return fields


async def checked_form(request: Request, session: Session) -> dict[str, list[str]]:
    """The form, once its CSRF token proves it came from one of this session's pages."""
    fields = await form(request)
    given = fields.get(CSRF_FIELD, [None])[0]
    if not session.csrf_matches(dashboard(request).session_key, given):
        raise ProblemException(
            403,
            "the form's CSRF token is missing or not this session's; reload the page and try again",
            kind="csrf",
        )
    return fields


def page(
    request: Request,
    template: str,
    session: Session | None,
    status: int = 200,
    **values: Any,
) -> HTMLResponse:
    context = dashboard(request)
    principal = session.principal if session else None
    html = context.templates.get_template(template).render(
        request=request,
        session=session,
        principal=principal,
        can=permissions(principal) if principal else {},
        csrf=session.csrf_token(context.session_key) if session else "",
        feed_id=context.feed.event_id,
        **values,
    )
    return HTMLResponse(html, status_code=status, headers={"Content-Security-Policy": CSP})


# What an action reports back: a fixed text per code (never text from the request, so
# a crafted link cannot put words on the page), with a count where it has one.
NOTICES = {
    "cancel-requested": "Cancel requested.",
    "cancelled-many": "Cancel requested for {n} run(s).",
    "replayed": "Replayed as a new run.",
    "replayed-many": "Replayed {n} run(s).",
    "not-all": "{n} run(s) could not be changed (finished, live or not visible).",
    "bulk-done": "The bulk action changed {n} run(s).",
    "bulk-skipped": "The bulk action skipped {n} run(s): their state moved on meanwhile.",
    "paused": "Schedule paused: it plans no runs until resumed.",
    "resumed": "Schedule resumed from now.",
    "triggered": "Triggered: a run was enqueued.",
    "draining": "Worker draining: it finishes what it holds and claims nothing new.",
    "worker-resumed": "Worker resumed: it claims again.",
    "limit-set": "Limit saved.",
    "limit-cleared": "Limit removed.",
    "job-saved": "Job saved.",
    "breaker-reset": "Breaker closed; the reset is recorded as a transition.",
    "rate-set": "Rate saved.",
    "rate-cleared": "Rate removed.",
    "queue-paused": "Queue paused: workers stop claiming its runs within about a second.",
    "queue-resumed": "Queue resumed: workers claim its runs again.",
    "queue-limit-set": "Concurrency limit saved.",
    "queue-limit-cleared": "Concurrency limit removed.",
}


def notice(code: str | None, count: str | None) -> str | None:
    text = NOTICES.get(code or "")
    if text is None:
        return None
    try:
        return text.format(n=whole_number("n", count, 0, 999_999))
    except InvalidArgument:
        return text.format(n="some")


def back_to(path: str, code: str, count: int | None = None) -> Response:
    """Post/redirect/get: after an action, the page it was made from, with a notice."""
    joiner = "&" if "?" in path else "?"
    extra = f"&n={count}" if count is not None else ""
    return RedirectResponse(f"{path}{joiner}notice={code}{extra}", status_code=303)


def local_path(value: str | None, default: str = "/") -> str:
    """A redirect target from a form: a path on this server only, never elsewhere."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return default
    return value
