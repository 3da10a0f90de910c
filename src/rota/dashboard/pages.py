"""The pages: each reads through rota.dashboard.reads and renders one template. Every
page is complete HTML (readable with JavaScript off); its live region is re-fetched
by htmx when the change feed says something changed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from rota.dashboard import charts as chart_pages
from rota.dashboard import filters, reads
from rota.dashboard.sessions import Session
from rota.dashboard.web import dashboard, notice, page, viewer
from rota.dashboard.workflow_graph import layout
from rota.domain.states import RunState
from rota.domain.values import MAX_ID, whole_number
from rota.errors import InvalidArgument, RunNotFound, WorkflowRunNotFound

router = APIRouter()
Viewer = Annotated[Session, Depends(viewer)]


def _notice(request: Request) -> str | None:
    return notice(request.query_params.get("notice"), request.query_params.get("n"))


@router.get("/", name="overview")
async def overview(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    data = await reads.overview(
        await context.store(), context.api.clock, session.principal, context.counts
    )
    return page(request, "overview.html", session, data=data, nav="overview")


async def _runs_page(
    request: Request, session: Session, template: str, nav: str, states: tuple[RunState, ...]
) -> HTMLResponse:
    context = dashboard(request)
    parsed = filters.parse(request.query_params, session.principal, states)
    runs = await reads.search_runs(await context.store(), parsed.search, parsed.job)
    next_before = runs[-1].id if len(runs) == parsed.search.limit else None
    return page(
        request,
        template,
        session,
        filters=parsed,
        runs=runs,
        next_before=next_before,
        notice=_notice(request),
        nav=nav,
    )


@router.get("/runs", name="runs")
async def runs(request: Request, session: Viewer) -> HTMLResponse:
    return await _runs_page(request, session, "runs.html", "runs", ())


@router.get("/dlq", name="dead_letters")
async def dead_letters(request: Request, session: Viewer) -> HTMLResponse:
    return await _runs_page(request, session, "dlq.html", "dlq", (RunState.DEAD_LETTERED,))


def run_id_of(text: str) -> int:
    """A run id from a path; anything else is a run that does not exist (404 page)."""
    try:
        return whole_number("run id", text, 1, MAX_ID)
    except InvalidArgument:
        raise RunNotFound(0) from None


@router.get("/runs/{run_id}", name="run")
async def run(request: Request, run_id: str, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    detail, made_by = await reads.run_detail(
        await context.store(), session.principal, run_id_of(run_id)
    )
    notes = _notice(request)
    return page(request, "run.html", session, detail=detail, job=made_by, notice=notes, nav="runs")


@router.get("/runs/{run_id}/logs", name="run_logs")
async def run_logs(
    request: Request, run_id: str, session: Viewer, after: str = "0", final: str = ""
) -> HTMLResponse:
    """The tail of a run's log: the lines after seq ``after`` (a fragment for htmx;
    without JavaScript the run page itself shows every line)."""
    context = dashboard(request)
    seq = whole_number("after", after)
    run, lines = await reads.run_logs_after(
        await context.store(), session.principal, run_id_of(run_id), seq
    )
    return page(
        request,
        "_log_lines.html",
        session,
        run=run,
        lines=lines,
        after=seq,
        # A run that has ended is read once more (its last lines follow its outcome).
        final=bool(final) or not run.state.is_terminal,
    )


@router.get("/workflows", name="workflow_runs")
async def workflow_runs(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    views = await reads.workflow_runs(await context.store(), session.principal)
    return page(request, "workflows.html", session, views=views, nav="workflows")


@router.get("/workflows/{workflow_run_id}", name="workflow_run")
async def workflow_run(request: Request, workflow_run_id: str, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    try:
        wanted = whole_number("workflow run id", workflow_run_id, 1, MAX_ID)
    except InvalidArgument:
        raise WorkflowRunNotFound(0) from None
    view = await reads.workflow_run(await context.store(), session.principal, wanted)
    return page(request, "workflow.html", session, view=view, graph=layout(view), nav="workflows")


@router.get("/jobs", name="jobs")
async def jobs(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    store = await context.store()
    listed = await reads.list_jobs(store, session.principal)
    starts = await reads.recent_starts(store, listed)
    return page(
        request,
        "jobs.html",
        session,
        jobs=listed,
        starts=starts,
        notice=_notice(request),
        nav="jobs",
    )


@router.get("/jobs/{namespace}/{name}", name="job")
async def job(request: Request, namespace: str, name: str, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    detail = await reads.job_detail(
        await context.store(), context.api.clock, session.principal, namespace, name
    )
    return page(request, "job.html", session, detail=detail, notice=_notice(request), nav="jobs")


@router.get("/workers", name="workers")
async def workers(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    rows = await reads.workers(
        await context.store(), context.api.clock, session.principal, context.counts
    )
    return page(request, "workers.html", session, rows=rows, notice=_notice(request), nav="workers")


@router.get("/limits", name="limits")
async def limits(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    listed = await reads.limits(await context.store())
    return page(
        request, "limits.html", session, limits=listed, notice=_notice(request), nav="limits"
    )


@router.get("/leader", name="leader")
async def leader(request: Request, session: Viewer) -> HTMLResponse:
    context = dashboard(request)
    info, terms = await reads.leader(await context.store())
    return page(
        request,
        "leader.html",
        session,
        leader=info,
        terms=terms,
        shown=reads.LEADER_TERMS,
        nav="leader",
    )


@router.get("/charts", name="charts")
async def charts(
    request: Request, session: Viewer, range: str = "1h", by: str = "queue", key: str = ""
) -> HTMLResponse:
    context = dashboard(request)
    view = await chart_pages.charts_view(await context.store(), session.principal, range, by, key)
    return page(request, "charts.html", session, view=view, nav="charts")
