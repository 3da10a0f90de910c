"""Bulk actions on every run a filter matches (issue 29): a preview that counts them,
then the action, confirmed by sending that count back.

The filter is the run listing's query parameters (but its page: no ``limit`` or
``cursor``), narrowed to the states the action may touch. cancel, requeue and replay
need jobs:trigger; delete needs jobs:admin (it removes history); the preview is a read.
The audit log gets one entry per action: the filter, the count confirmed and what was
done, never a payload.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Query, Request

from rota.api.auth import Admin, Reader, Trigger
from rota.api.context import Context, StoreDep, audit_target, correlation_id
from rota.api.problems import AUTHENTICATED, responses
from rota.api.routes.runs import visible_namespaces
from rota.api.schemas.bulk import BulkConfirm, BulkPreviewOut, BulkResultOut
from rota.api.schemas.fields import Instant, Name
from rota.domain.access import Principal
from rota.domain.bulk_actions import BulkAction, BulkResult, parse_action
from rota.domain.search import RunSearch
from rota.domain.states import RunState
from rota.errors import InvalidArgument
from rota.services import bulk_actions

router = APIRouter(prefix="/api/v1/runs/bulk", tags=["runs"])
ActionName = Annotated[str, Path(max_length=40, description="cancel, requeue, replay or delete.")]
TriggerAction = Annotated[
    str, Path(max_length=40, description="cancel, requeue or replay (delete: its own route).")
]


class BulkFilters:
    """The run listing's filters (GET /api/v1/runs), without its page."""

    def __init__(
        self,
        namespace: Annotated[Name | None, Query(description="Only this namespace.")] = None,
        state: Annotated[list[RunState] | None, Query(description="Any of these states.")] = None,
        handler: Annotated[Name | None, Query()] = None,
        queue: Annotated[Name | None, Query()] = None,
        tag: Annotated[Name | None, Query(description="Runs that require this tag.")] = None,
        job: Annotated[Name | None, Query(description="Runs of this job (in namespace).")] = None,
        created_after: Annotated[
            Instant | None, Query(description="ISO 8601 with an offset, inclusive.")
        ] = None,
        created_before: Annotated[
            Instant | None, Query(description="ISO 8601 with an offset, exclusive.")
        ] = None,
        q: Annotated[
            str | None,
            Query(min_length=1, max_length=200, description="Text in handler, job or error."),
        ] = None,
    ) -> None:
        self.namespace = namespace
        self.states = tuple(dict.fromkeys(state or ()))
        self.handler = handler
        self.queue = queue
        self.tag = tag
        self.job = job
        self.created_after = created_after
        self.created_before = created_before
        self.q = q

    def search(self, principal: Principal) -> RunSearch:
        return RunSearch(
            namespaces=visible_namespaces(principal, self.namespace),
            states=self.states,
            handler=self.handler,
            queue=self.queue,
            tag=self.tag,
            created_after=self.created_after,
            created_before=self.created_before,
            text=self.q,
        )

    @property
    def job_key(self) -> tuple[str, str] | None:
        return (self.namespace or "default", self.job) if self.job else None

    def described(self) -> str:
        """The filter as the audit log shows it: names and values, no payload."""
        given = {
            "namespace": self.namespace,
            "state": ",".join(s.value for s in self.states) or None,
            "handler": self.handler,
            "queue": self.queue,
            "tag": self.tag,
            "job": self.job,
            "created_after": self.created_after and self.created_after.isoformat(),
            "created_before": self.created_before and self.created_before.isoformat(),
            "q": self.q,
        }
        return " ".join(f"{name}={value}" for name, value in given.items() if value) or "all"


Filters = Annotated[BulkFilters, Depends()]


@router.get("/{action}/preview", responses=responses(*AUTHENTICATED, 400))
async def preview_bulk_action(
    action: ActionName, principal: Reader, store: StoreDep, filters: Filters
) -> BulkPreviewOut:
    """How many runs ``action`` would act on now: those the filter matches in the states
    the action may touch (cancel: live runs; requeue: dead-lettered, failed, timed out,
    cancelled; replay: dead-lettered; delete: finished runs)."""
    found = await bulk_actions.preview(
        store, parse_action(action), filters.search(principal), filters.job_key
    )
    return BulkPreviewOut.of(found)


async def _act(
    request: Request,
    action: BulkAction,
    principal: Principal,
    context: Context,
    store: StoreDep,
    filters: BulkFilters,
    confirm: BulkConfirm,
) -> BulkResultOut:
    about = f"{action.value} runs where {filters.described()}"
    audit_target(request, f"{about}; expected {confirm.expected_count}", filters.namespace)
    result: BulkResult = await bulk_actions.run_action(
        store,
        context.clock,
        action,
        filters.search(principal),
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
) -> BulkResultOut:
    """Delete every finished run the filter matches, with its attempts and logs (never a
    workflow's step: it goes with its workflow run). Needs jobs:admin."""
    return await _act(request, BulkAction.DELETE, principal, context, store, filters, confirm)


@router.post("/{action}", responses=responses(*AUTHENTICATED, 400, 409))
async def act_on_runs_in_bulk(
    request: Request,
    action: TriggerAction,
    principal: Trigger,
    context: Context,
    store: StoreDep,
    filters: Filters,
    confirm: Annotated[BulkConfirm, Body()],
) -> BulkResultOut:
    """Cancel, requeue or replay every run the filter matches, in keyset batches of 500,
    once ``expected_count`` (from the preview) is still the count (else 409
    count-changed, and nothing is done). Runs whose state moved on meanwhile are
    skipped and counted."""
    chosen = parse_action(action)
    if chosen is BulkAction.DELETE:  # /delete is its own route (jobs:admin), matched first
        raise InvalidArgument("action", action, "cancel, requeue or replay on this route")
    return await _act(request, chosen, principal, context, store, filters, confirm)
