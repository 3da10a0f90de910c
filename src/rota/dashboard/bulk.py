"""The runs page's bulk action on its current filter (issue 29): a preview page that
shows the count the filter matches now, then a confirming POST form (CSRF, the scope
its API twin needs, audited under the twin's name) that acts only while the filter
still matches that count. The walk is rota.services.bulk_actions, as for the API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import QueryParams

from rota.api.context import audit_target, correlation_id
from rota.dashboard import filters
from rota.dashboard.sessions import Session
from rota.dashboard.web import back_to, checked_form, dashboard, page, require, viewer
from rota.domain.access import Scope
from rota.domain.bulk_actions import ACTION_STATES, BulkAction, parse_action
from rota.domain.values import MAX_ID, whole_number
from rota.errors import InvalidArgument
from rota.services import bulk_actions

router = APIRouter()
Viewer = Annotated[Session, Depends(viewer)]
# The form's own fields; every other one is a filter of the runs page.
OWN_FIELDS = ("csrf", "action", "expected_count")


def _scope(action: BulkAction) -> Scope:
    return Scope.ADMIN if action is BulkAction.DELETE else Scope.TRIGGER


def _filter_query(pairs: list[tuple[str, str]]) -> QueryParams:
    return QueryParams([(k, v) for k, v in pairs if k not in (*OWN_FIELDS, "before")])


@router.get("/runs/bulk-action", name="preview_bulk_action")
async def preview_bulk_action(request: Request, session: Viewer) -> HTMLResponse:
    """What the action would touch: the count now, and the confirming form (shown only
    to a caller who may act, and only for a filter read without a problem)."""
    action = parse_action(request.query_params.get("action", "")[:40])
    query = _filter_query(list(request.query_params.multi_items()))
    parsed = filters.parse(query, session.principal)
    count = None
    if not parsed.problems:
        context = dashboard(request)
        found = await bulk_actions.preview(await context.store(), action, parsed.search, parsed.job)
        count = found.count
    return page(
        request,
        "runs_bulk.html",
        session,
        action=action,
        allowed_states=sorted(s.value for s in ACTION_STATES[action]),
        filters=parsed,
        query=str(query),
        pairs=list(query.multi_items()),
        count=count,
        needs=_scope(action).value,
        nav="runs",
    )


@router.post("/runs/bulk-action", name="act_on_runs_in_bulk")
async def act_on_runs_in_bulk(request: Request, session: Viewer) -> Response:
    fields = await checked_form(request, session)
    action = parse_action(fields.get("action", [""])[0][:40])
    pairs = [(name, value) for name, values in fields.items() for value in values]
    query = _filter_query(pairs)
    parsed = filters.parse(query, session.principal)
    audit_target(request, f"{action.value} runs where {str(query)[:200] or 'all'}")
    require(session.principal, _scope(action))
    if parsed.problems:  # a filter value dropped would widen the action: refuse it
        raise InvalidArgument("filter", parsed.problems[0], "filters that all apply")
    expected = whole_number("expected_count", fields.get("expected_count", [""])[0], 0, MAX_ID)
    context = dashboard(request)
    result = await bulk_actions.run_action(
        await context.store(),
        context.api.clock,
        action,
        parsed.search,
        expected,
        parsed.job,
        correlation_id(request),
    )
    request.state.audit_target = (
        f"{action.value} runs where {str(query)[:200] or 'all'}; matched {result.matched}, "
        f"affected {result.affected}, skipped {result.skipped}"
    )
    back = f"/runs?{query}" if str(query) else "/runs"
    if result.skipped:
        return back_to(back, "bulk-skipped", result.skipped)
    return back_to(back, "bulk-done", result.affected)
