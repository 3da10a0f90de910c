"""The circuit breakers and rate limits page (issue 14): each breaker's state, counts
and cause, the newest transitions with their time and cause, and the rate limits on
run starts; a cluster admin resets a breaker and sets or removes a rate, with the
session's CSRF token, through the same use cases as the API, audited under the API's
route names."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from rota.api.context import audit_target
from rota.dashboard.sessions import Session
from rota.dashboard.web import back_to, checked_form, dashboard, notice, page, require, viewer
from rota.domain.access import Scope
from rota.domain.breakers import BreakerRow, Transition
from rota.services import controls as control_service

router = APIRouter()
Viewer = Annotated[Session, Depends(viewer)]
TRANSITIONS_SHOWN = 50


def _at(micros: int | None) -> datetime | None:
    return None if micros is None else datetime.fromtimestamp(micros / 1_000_000, UTC)


@dataclass(frozen=True)
class BreakerLine:
    """A breaker as the page shows it (instants as datetimes for the template)."""

    row: BreakerRow
    opened_at: datetime | None
    window_started_at: datetime | None


@dataclass(frozen=True)
class TransitionLine:
    move: Transition
    at: datetime | None


@router.get("/breakers", name="breakers")
async def breakers(request: Request, session: Viewer) -> HTMLResponse:
    store = await dashboard(request).store()
    reach = session.principal.namespaces  # a breaker is shown to the namespaces that moved it
    rows = await control_service.list_breakers(store, dashboard(request).api.clock, reach)
    moves = await control_service.breaker_transitions(store, TRANSITIONS_SHOWN, reach)
    return page(
        request,
        "breakers.html",
        session,
        breakers=[BreakerLine(r, _at(r.opened_at), _at(r.window_started_at)) for r in rows],
        transitions=[TransitionLine(t, _at(t.at)) for t in moves],
        rules=await control_service.breaker_rules(store),
        rates=await control_service.list_rates(store),
        shown=TRANSITIONS_SHOWN,
        notice=notice(request.query_params.get("notice"), request.query_params.get("n")),
        nav="breakers",
    )


def _field(fields: dict[str, list[str]], name: str) -> str:
    return fields.get(name, [""])[0].strip()


@router.post("/breakers/reset", name="reset_breaker")
async def reset_breaker(request: Request, session: Viewer) -> Response:
    audit_target(request, "breaker")  # named below once the form is read
    fields = await checked_form(request, session)
    handler, key = _field(fields, "handler"), _field(fields, "key")
    audit_target(request, f"breaker {handler[:200]}")
    require(session.principal, Scope.ADMIN, cluster_wide=True)
    context = dashboard(request)
    await control_service.reset_breaker(await context.store(), context.api.clock, handler, key)
    return back_to("/breakers", "breaker-reset")


async def _rate_form(request: Request, session: Session) -> tuple[str, str, str]:
    """A rate form's scope, name and rate, once its CSRF token and the caller's right to
    act on the whole cluster are checked (audited as the rate it names)."""
    audit_target(request, "rate")  # named below once the form is read
    fields = await checked_form(request, session)
    scope, name = _field(fields, "scope"), _field(fields, "name")
    audit_target(request, f"rate {scope[:40]}:{name[:100]}")
    require(session.principal, Scope.ADMIN, cluster_wide=True)
    return scope, name, _field(fields, "rate")


@router.post("/breakers/rates", name="set_rate")
async def set_rate(request: Request, session: Viewer) -> Response:
    scope, name, rate = await _rate_form(request, session)
    await control_service.set_rate(await dashboard(request).store(), scope, name, rate)
    return back_to("/breakers", "rate-set")


@router.post("/breakers/rates/clear", name="clear_rate")
async def clear_rate(request: Request, session: Viewer) -> Response:
    scope, name, _ = await _rate_form(request, session)
    await control_service.clear_rate(await dashboard(request).store(), scope, name)
    return back_to("/breakers", "rate-cleared")
