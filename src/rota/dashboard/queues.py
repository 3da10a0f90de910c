"""The queues page (issue 29, ADR 0035): each queue's depth by state, oldest due age,
recent throughput and failure rate, workers, pause and cap; a cluster admin pauses,
resumes and caps a queue with the session's CSRF token, through the same use cases as
the API, audited under the API's route names."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from rota.api.context import audit_target
from rota.dashboard import reads
from rota.dashboard.sessions import Session
from rota.dashboard.web import back_to, checked_form, dashboard, notice, page, require, viewer
from rota.domain.access import Scope
from rota.domain.queues import RECENT_WINDOW
from rota.domain.values import MAX_INT32, whole_number
from rota.services import queues as queue_service

router = APIRouter()
Viewer = Annotated[Session, Depends(viewer)]


@router.get("/queues", name="queues")
async def queues(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    store = await context.store()
    rows = await reads.queues(store, context.api.clock, session.principal, context.counts)
    return page(
        request,
        "queues.html",
        session,
        queues=rows,
        window_minutes=int(RECENT_WINDOW.total_seconds() // 60),
        notice=notice(request.query_params.get("notice"), request.query_params.get("n")),
        nav="queues",
    )


async def _admin_form(request: Request, session: Session, name: str) -> dict[str, list[str]]:
    """The form, once its CSRF token and the caller's right to act on the whole cluster
    are checked (audited as the queue it names, whatever the outcome)."""
    audit_target(request, f"queue {name[:200]}")
    fields = await checked_form(request, session)
    require(session.principal, Scope.ADMIN, cluster_wide=True)
    return fields


@router.post("/queues/{name}/pause", name="pause_queue")
async def pause_queue(request: Request, name: str, session: Viewer) -> Response:
    await _admin_form(request, session, name)
    context = dashboard(request)
    who = session.principal.who
    await queue_service.pause_queue(await context.store(), context.api.clock, name, who)
    return back_to("/queues", "queue-paused")


@router.post("/queues/{name}/resume", name="resume_queue")
async def resume_queue(request: Request, name: str, session: Viewer) -> Response:
    await _admin_form(request, session, name)
    context = dashboard(request)
    await queue_service.resume_queue(await context.store(), context.api.clock, name)
    return back_to("/queues", "queue-resumed")


@router.post("/queues/{name}/limit", name="set_queue_limit")
async def set_queue_limit(request: Request, name: str, session: Viewer) -> Response:
    fields = await _admin_form(request, session, name)
    text = fields.get("max_running", [""])[0].strip()
    # Empty removes the cap; anything else must be a whole number the cap allows.
    wanted = None if text == "" else whole_number("concurrency limit", text, 1, MAX_INT32)
    await queue_service.set_queue_limit(await dashboard(request).store(), name, wanted)
    return back_to("/queues", "queue-limit-set" if wanted else "queue-limit-cleared")
