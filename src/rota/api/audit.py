"""The audit log: every mutating call (POST, PUT, PATCH, DELETE under /api/v1) by an
authenticated caller is recorded — who, what, target, the status answered and the
correlation id — before the response is sent, so a caller that sees the answer can
already read its entry. Refused calls (403, 409, 422) are recorded too; calls that never
authenticated (401) are not, so anonymous noise cannot flood the log."""

from __future__ import annotations

from typing import Any

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rota import access
from rota.api.context import ApiContext
from rota.domain.access import NewAuditEntry, Principal
from rota.errors import RotaError

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
log = structlog.get_logger("rota.api.audit")


def outcome_of(status: int) -> str:
    if status < 400:
        return "ok"
    if status in (401, 403):
        return "denied"
    if status < 500:
        return "rejected"
    return "failed"


class AuditMiddleware:
    def __init__(self, app: ASGIApp, context: ApiContext) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in MUTATING
            or not scope["path"].startswith("/api/")
        ):
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                await self._record(scope, int(message["status"]))
            await send(message)

        await self.app(scope, receive, sending)

    async def _record(self, scope: Scope, status: int) -> None:
        state: dict[str, Any] = scope.get("state", {})
        principal = state.get("principal")
        if not isinstance(principal, Principal):
            return
        route = scope.get("route")
        entry = NewAuditEntry(
            actor=principal.who,
            action=_action(scope, route),
            target=str(state.get("audit_target") or scope["path"]),
            namespace=state.get("audit_namespace"),
            status=status,
            outcome=outcome_of(status),
            correlation_id=state.get("correlation_id"),
            detail=state.get("problem_detail"),
        )
        try:
            await access.record(await self.context.store(), self.context.clock, entry)
        except RotaError as exc:
            # The call already happened; losing its entry is logged loudly, not hidden.
            log.exception("audit entry not written", error=str(exc), entry=str(entry))


def _action(scope: Scope, route: Any) -> str:
    """The route's name (``create_job``, ``cancel_run``); else the method and path."""
    name = getattr(route, "name", None)
    return str(name) if name else f"{scope['method']} {scope['path']}"
