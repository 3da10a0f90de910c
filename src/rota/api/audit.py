"""The audit log: every mutating call (POST, PUT, PATCH, DELETE under /api/v1) by an
authenticated caller is recorded — who, what, target, namespace, the status answered and
the correlation id — before the response is sent, so a caller that sees the answer can
already read its entry. Refused calls (403, 404, 409, 422) and failed ones (500) are
recorded too, and so are failed authentications on any route (without the credential).

Bounded and free of payload values: ``detail`` holds the kind of problem and the names
of the fields at fault (cut to :data:`MAX_DETAIL`), never the problem's text, which may
quote what the caller sent. Flood-proof: throttled calls (429) and failed
authentications are sampled, one entry per caller or source address per window, and
that entry counts the ones the previous window left out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rota.api.context import ApiContext
from rota.domain.access import NewAuditEntry, Principal
from rota.domain.values import storable_text
from rota.errors import RotaError
from rota.services import access

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_DETAIL = 300
MAX_FIELD_NAME = 80
MAX_FIELDS = 10
MAX_SAMPLED_KEYS = 10_000
log = structlog.get_logger("rota.api.audit")


def outcome_of(status: int) -> str:
    if status in (401, 403):
        return "denied"
    if status == 429:
        return "throttled"
    if status < 400:
        return "ok"
    if status < 500:
        return "rejected"
    return "failed"


def detail_of(state: dict[str, Any]) -> str | None:
    """``kind: field, field`` from the problem answered; None for a success."""
    kind = state.get("problem_kind")
    if kind is None:
        return None
    fields = [str(name)[:MAX_FIELD_NAME] for name in state.get("problem_fields") or []]
    text = str(kind)
    if fields:
        more = len(fields) - MAX_FIELDS
        text += ": " + ", ".join(fields[:MAX_FIELDS]) + (f" (+{more} more)" if more > 0 else "")
    return text[:MAX_DETAIL]


class Sampler:
    """One admitted event per key per window; the rest are counted, and the next
    admitted event of that key carries the count of those left out before it."""

    def __init__(self, window: float, monotonic: Callable[[], float]) -> None:
        self.window = window
        self._monotonic = monotonic
        self._windows: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def admit(self, key: str) -> int | None:
        """None to leave this event out; else how many were left out before it."""
        now = self._monotonic()
        started, left_out = self._windows.pop(key, (None, 0))
        if started is not None and now - started < self.window:
            self._windows[key] = (started, left_out + 1)
            return None
        self._windows[key] = (now, 0)
        if len(self._windows) > MAX_SAMPLED_KEYS:
            self._windows.popitem(last=False)
        return left_out


class AuditMiddleware:
    def __init__(self, app: ASGIApp, context: ApiContext) -> None:
        self.app = app
        self.context = context
        self.sampler = Sampler(
            context.settings.audit_sample_window_seconds, context.clock.monotonic
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                await self._record(scope, int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            # A bug: the edge answers 500 after this; the call still gets its entry.
            if not answered:
                scope.setdefault("state", {})["problem_kind"] = "internal-error"
                await self._record(scope, 500)
            raise

    async def _record(self, scope: Scope, status: int) -> None:
        entry = self._entry(scope, status)
        if entry is None:
            return
        try:
            await access.record(await self.context.store(), self.context.clock, entry)
        except RotaError as exc:
            # The call already happened; losing its entry is logged loudly, not hidden.
            log.exception(
                "audit entry not written",
                error_kind=type(exc).__name__,
                action=entry.action,
                actor=entry.actor,
                status=entry.status,
                correlation_id=entry.correlation_id,
            )

    def _entry(self, scope: Scope, status: int) -> NewAuditEntry | None:
        state: dict[str, Any] = scope.get("state", {})
        principal = state.get("principal")
        failure = state.get("auth_failure")
        detail = detail_of(state)
        if isinstance(principal, Principal):
            # API calls, and the dashboard's forms (which name their target as the API does).
            audited = scope["path"].startswith("/api/") or "audit_target" in state
            if scope["method"] not in MUTATING or not audited:
                return None
            actor = principal.who
            namespace = _namespace(scope, state, principal)
            target = str(state.get("audit_target") or scope["path"])
            action = _action(scope)
        elif failure is not None:
            # Never the credential: what kind it was, and where it came from.
            source = _source(scope)
            actor, namespace, target = "anonymous", None, f"source {source}"
            action = "authenticate"
            detail = f"{failure} credential refused" if failure != "blocked" else "blocked"
        else:
            return None
        if status in (401, 429):
            left_out = self.sampler.admit(target if actor == "anonymous" else actor)
            if left_out is None:
                return None
            if left_out:
                detail = f"{detail or ''}; {left_out} more in the previous window"[:MAX_DETAIL]
        # What the request named goes in as text every store holds (a NUL in a path
        # would fail the audit write on PostgreSQL).
        return NewAuditEntry(
            actor=actor,
            action=storable_text(action),
            target=storable_text(target[:MAX_DETAIL]),
            namespace=None if namespace is None else storable_text(namespace),
            status=status,
            outcome=outcome_of(status),
            correlation_id=state.get("correlation_id"),
            detail=detail,
        )


def _namespace(scope: Scope, state: dict[str, Any], principal: Principal) -> str | None:
    """The namespace the route named; else the one asked for in the query if the caller
    reaches it; else the caller's only namespace. A refused call (403, another
    namespace's 404) thus lands where the caller's own admins see it."""
    named = state.get("audit_namespace")
    if named is not None:
        return str(named)
    if principal.namespaces is None:
        return None
    asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("namespace", [])
    if len(asked) == 1 and asked[0] in principal.namespaces:
        return str(asked[0])
    if len(principal.namespaces) == 1:
        return next(iter(principal.namespaces))
    return None


def _source(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _action(scope: Scope) -> str:
    """The route's name (``create_job``, ``cancel_run``); else the method and path."""
    name = getattr(scope.get("route"), "name", None)
    return str(name) if name else f"{scope['method']} {scope['path']}"
