"""Runs: search with keyset pagination, one run with its attempts, its logs, cancel,
requeue; and the dead-letter queue, which is the runs that ran out of attempts."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request

from rota.api import pagination
from rota.api.auth import Reader, Trigger
from rota.api.context import Context, StoreDep, audit_target, correlation_id
from rota.api.problems import AUTHENTICATED, responses
from rota.api.run_filters import (
    Filters,
    Page,
    PageQuery,
    RunFilters,
    StatesQuery,
    distinct_states,
)
from rota.api.schemas.fields import MAX_ID, IdempotencyKey, Name
from rota.api.schemas.runs import (
    AttemptOut,
    EnqueueRequest,
    LogLineOut,
    ReplayMany,
    ReplayManyOut,
    ReplayResultOut,
    Requeued,
    RunCreated,
    RunDetailOut,
    RunLogs,
    RunOut,
    RunPage,
)
from rota.domain.access import Principal
from rota.domain.states import RunState
from rota.errors import InvalidArgument
from rota.services import runs as run_service
from rota.services.runs import RunRequest

router = APIRouter(prefix="/api/v1/runs", tags=["runs"])
dlq = APIRouter(prefix="/api/v1/dlq", tags=["dead-letter queue"])
RunId = Annotated[int, Path(ge=1, le=MAX_ID)]
CURSOR = "run"
NamespaceQuery = Annotated[Name, Query(description="The namespace the run belongs to.")]


async def _page(
    store: StoreDep,
    principal: Principal,
    filters: RunFilters,
    states: tuple[RunState, ...],
    page: Page,
) -> RunPage:
    search = dataclasses.replace(
        filters.search(principal, states),
        before_id=pagination.decode(CURSOR, page.cursor),
        limit=page.limit,
    )
    runs = await run_service.search_runs(store, search, filters.job_key)
    return RunPage(
        items=[RunOut.of(run) for run in runs],
        next_cursor=pagination.next_cursor(CURSOR, [r.id for r in runs], page.limit),
    )


@router.post("", status_code=201, responses=responses(*AUTHENTICATED, 400))
async def enqueue_run(
    request: Request,
    principal: Trigger,
    context: Context,
    store: StoreDep,
    body: Annotated[EnqueueRequest, Body()],
    namespace: NamespaceQuery = "default",
    idempotency_key: IdempotencyKey = None,
) -> RunCreated:
    """Run a handler the server knows, once, now or at ``run_at``: what a service that
    is not written in Python calls to start background work."""
    audit_target(request, f"handler {body.handler}", namespace)
    if not principal.can_see(namespace):
        raise InvalidArgument("namespace", namespace, "a namespace your credentials cover")
    run_request = RunRequest(
        handler=body.handler,
        payload=body.payload,
        run_at=body.run_at,
        priority=body.priority,
        idempotency_key=idempotency_key,
        queue=body.queue,
        max_attempts=body.max_attempts,
        timeout=body.timeout_seconds,
        tags=body.tags,
        concurrency_key=body.concurrency_key,
        key_limit=body.key_limit,
        deadline=body.deadline,
        rate_key=body.rate_key,
        breaker_key=body.breaker_key,
        owner=body.owner,
        labels=body.labels,
    )
    run_id = await run_service.enqueue_in(
        store,
        context.clock,
        context.rota_app.registry,
        namespace,
        run_request,
        correlation_id(request),
    )
    return RunCreated(run_id=run_id)


@router.get("", responses=responses(*AUTHENTICATED, 400))
async def list_runs(
    principal: Reader,
    store: StoreDep,
    filters: Filters,
    page: PageQuery,
    state: StatesQuery = None,
) -> RunPage:
    """Runs newest first. Filters combine with AND; page on with ``next_cursor``."""
    return await _page(store, principal, filters, distinct_states(state), page)


@router.get("/{run_id}", responses=responses(*AUTHENTICATED, 404))
async def get_run(run_id: RunId, principal: Reader, store: StoreDep) -> RunDetailOut:
    """One run with every attempt: start, end, duration, worker, fencing token, error."""
    detail = await run_service.run_detail(store, run_id, principal.namespaces)
    return RunDetailOut(
        run=RunOut.of(detail.run), attempts=[AttemptOut.of(a) for a in detail.attempts]
    )


@router.get("/{run_id}/logs", responses=responses(*AUTHENTICATED, 404))
async def run_logs(
    run_id: RunId,
    principal: Reader,
    store: StoreDep,
    after: Annotated[int | None, Query(ge=0, le=MAX_ID)] = None,
) -> RunLogs:
    """The lines the handler logged through ``ctx.log``, in order, including those of
    an attempt still running (written every half second or so). With ``after``, only
    the lines whose ``seq`` is greater: pass the last ``seq`` seen to tail the log."""
    lines = await run_service.run_logs(store, run_id, principal.namespaces, after)
    return RunLogs(run_id=run_id, lines=[LogLineOut.of(line) for line in lines])


@router.post("/{run_id}/cancel", responses=responses(*AUTHENTICATED, 404, 409))
async def cancel_run(
    request: Request, run_id: RunId, principal: Trigger, context: Context, store: StoreDep
) -> RunOut:
    """A waiting run is cancelled at once; a running one is asked to stop."""
    audit_target(request, f"run {run_id}")
    run = await run_service.cancel(store, context.clock, run_id, principal.namespaces)
    request.state.audit_namespace = run.namespace
    return RunOut.of(run)


async def _requeue(
    request: Request, run_id: RunId, principal: Principal, context: Context, store: StoreDep
) -> Requeued:
    audit_target(request, f"run {run_id}")
    # The entry belongs to the run's namespace, so that namespace's admins see it (a
    # run the caller cannot see stays a 404 and reveals nothing).
    run = await run_service.get_run(store, run_id, principal.namespaces)
    request.state.audit_namespace = run.namespace
    new_id = await run_service.replay(
        store, context.clock, run_id, principal.namespaces, correlation_id(request)
    )
    return Requeued(run_id=run_id, new_run_id=new_id)


@router.post("/{run_id}/requeue", status_code=201, responses=responses(*AUTHENTICATED, 404, 409))
async def requeue_run(
    request: Request, run_id: RunId, principal: Trigger, context: Context, store: StoreDep
) -> Requeued:
    """Run a finished run again as a fresh run (dead-lettered, failed, timed out or
    cancelled). Asking twice returns the same new run."""
    return await _requeue(request, run_id, principal, context, store)


@dlq.get("", responses=responses(*AUTHENTICATED, 400))
async def list_dead(
    principal: Reader, store: StoreDep, filters: Filters, page: PageQuery
) -> RunPage:
    """Dead-lettered runs, newest first."""
    return await _page(store, principal, filters, (RunState.DEAD_LETTERED,), page)


@dlq.post("/replay", responses=responses(*AUTHENTICATED, 400))
async def replay_many(
    request: Request, principal: Trigger, context: Context, store: StoreDep, body: ReplayMany
) -> ReplayManyOut:
    """Replay each run on its own; one that cannot be replayed is reported, not fatal."""
    audit_target(request, "runs " + ",".join(str(i) for i in body.run_ids[:20]))
    results = await run_service.replay_many(
        store, context.clock, body.run_ids, principal.namespaces, correlation_id(request)
    )
    return ReplayManyOut(
        results=[
            ReplayResultOut(run_id=r.run_id, new_run_id=r.new_run_id, error=r.error)
            for r in results
        ]
    )


@dlq.post("/{run_id}/replay", status_code=201, responses=responses(*AUTHENTICATED, 404, 409))
async def replay_dead_run(
    request: Request, run_id: RunId, principal: Trigger, context: Context, store: StoreDep
) -> Requeued:
    """Replay one dead-lettered run as a fresh run."""
    return await _requeue(request, run_id, principal, context, store)
