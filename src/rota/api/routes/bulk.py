"""Bulk actions on every run a filter matches (issue 29): a preview that counts them,
then the action, confirmed by sending that count back.

The filter is the run listing's query parameters, the same ones (rota.api.run_filters)
but its page (no ``limit`` or ``cursor``), narrowed to the states the action may
touch. cancel, requeue and replay need jobs:trigger; delete needs jobs:admin (it
removes history); the preview is a read. The audit log gets one entry per action: the
filter, the count confirmed and what was done, never a payload.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Request

from rota.api.auth import Admin, Reader, Trigger
from rota.api.context import Context, StoreDep, audit_target, correlation_id
from rota.api.problems import AUTHENTICATED, responses
from rota.api.run_filters import Filters, RunFilters, StatesQuery, distinct_states
from rota.api.schemas.bulk import BulkConfirm, BulkPreviewOut, BulkResultOut
from rota.domain.access import Principal
from rota.domain.bulk_actions import BulkAction, BulkResult, parse_action
from rota.domain.states import RunState
from rota.errors import InvalidArgument
from rota.services import bulk_actions

router = APIRouter(prefix="/api/v1/runs/bulk", tags=["runs"])
ActionName = Annotated[str, Path(max_length=40, description="cancel, requeue, replay or delete.")]
TriggerAction = Annotated[
    str, Path(max_length=40, description="cancel, requeue or replay (delete: its own route).")
]


@router.get("/{action}/preview", responses=responses(*AUTHENTICATED, 400))
async def preview_bulk_action(
    action: ActionName,
    principal: Reader,
    store: StoreDep,
    filters: Filters,
    state: StatesQuery = None,
) -> BulkPreviewOut:
    """How many runs ``action`` would act on now: those the filter matches in the states
    the action may touch (cancel: live runs; requeue: dead-lettered, failed, timed out,
    cancelled; replay: dead-lettered; delete: finished runs)."""
    search = filters.search(principal, distinct_states(state))
    found = await bulk_actions.preview(store, parse_action(action), search, filters.job_key)
    return BulkPreviewOut.of(found)


async def _act(
    request: Request,
    action: BulkAction,
    principal: Principal,
    context: Context,
    store: StoreDep,
    filters: RunFilters,
    states: tuple[RunState, ...],
    confirm: BulkConfirm,
) -> BulkResultOut:
    about = f"{action.value} runs where {filters.described(states)}"
    audit_target(request, f"{about}; expected {confirm.expected_count}", filters.namespace)
    result: BulkResult = await bulk_actions.run_action(
        store,
        context.clock,
        action,
        filters.search(principal, states),
        confirm.expected_count,
        filters.job_key,
        correlation_id(request),
    )
    request.state.audit_target = (
        f"{about}; matched {result.matched}, affected {result.affected}, skipped {result.skipped}"
    )
    return BulkResultOut.of(result)


@router.post("/delete", responses=responses(*AUTHENTICATED, 400, 409))
async def delete_runs_in_bulk(
    request: Request,
    principal: Admin,
    context: Context,
    store: StoreDep,
    filters: Filters,
    confirm: Annotated[BulkConfirm, Body()],
    state: StatesQuery = None,
) -> BulkResultOut:
    """Delete every finished run the filter matches, with its attempts and logs (never a
    workflow's step: it goes with its workflow run). Needs jobs:admin."""
    states = distinct_states(state)
    return await _act(
        request, BulkAction.DELETE, principal, context, store, filters, states, confirm
    )


@router.post("/{action}", responses=responses(*AUTHENTICATED, 400, 409))
async def act_on_runs_in_bulk(
    request: Request,
    action: TriggerAction,
    principal: Trigger,
    context: Context,
    store: StoreDep,
    filters: Filters,
    confirm: Annotated[BulkConfirm, Body()],
    state: StatesQuery = None,
) -> BulkResultOut:
    """Cancel, requeue or replay every run the filter matches, in keyset batches of 500,
    once ``expected_count`` (from the preview) is still the count (else 409
    count-changed, and nothing is done). Runs whose state moved on meanwhile are
    skipped and counted."""
    chosen = parse_action(action)
    if chosen is BulkAction.DELETE:  # /delete is its own route (jobs:admin), matched first
        raise InvalidArgument("action", action, "cancel, requeue or replay on this route")
    states = distinct_states(state)
    return await _act(request, chosen, principal, context, store, filters, states, confirm)
