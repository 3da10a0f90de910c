"""Queues (issue 29, ADR 0035): each queue's depth, recent throughput and failure rate
and its workers; pausing, resuming and capping a queue cluster-wide.

Reading needs jobs:read (a caller limited to some namespaces sees their runs' counts);
pausing, resuming or capping a queue changes what every namespace gets, so, like
draining a worker, it needs jobs:admin and every namespace (``ClusterAdmin``). Each
mutation is audited by the middleware under its route name."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from rota.api.auth import ClusterAdmin, Reader
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.queues import QueueLimitIn, QueueList, QueueOut
from rota.services import queues as queue_service

router = APIRouter(prefix="/api/v1", tags=["cluster"])
QueueName = Annotated[
    str, Path(max_length=200, description="A queue name (checked: 422 names the rule).")
]


@router.get("/queues", responses=responses(*AUTHENTICATED))
async def list_queues(principal: Reader, context: Context, store: StoreDep) -> QueueList:
    """Every queue with runs, recent finished runs, a worker, a pause or a cap."""
    found = await queue_service.list_queues(store, context.clock, principal.namespaces)
    return QueueList(items=[QueueOut.of(q) for q in found])


@router.get("/queues/{name}", responses=responses(*AUTHENTICATED, 422))
async def get_queue(
    name: QueueName, principal: Reader, context: Context, store: StoreDep
) -> QueueOut:
    """One queue (a queue nothing has used yet is empty, not missing: queues are names)."""
    found = await queue_service.get_queue(store, context.clock, name, principal.namespaces)
    return QueueOut.of(found)


@router.post("/queues/{name}/pause", responses=responses(*AUTHENTICATED, 422))
async def pause_queue(
    request: Request, name: QueueName, principal: ClusterAdmin, context: Context, store: StoreDep
) -> QueueOut:
    """Every worker stops claiming the queue's runs within about a second; runs already
    claimed finish. The pause is kept in the database (it outlives restarts)."""
    audit_target(request, f"queue {name[:200]}")
    await queue_service.pause_queue(store, context.clock, name, principal.who)
    return QueueOut.of(await queue_service.get_queue(store, context.clock, name))


@router.post("/queues/{name}/resume", responses=responses(*AUTHENTICATED, 422))
async def resume_queue(
    request: Request, name: QueueName, principal: ClusterAdmin, context: Context, store: StoreDep
) -> QueueOut:
    """Workers claim the queue's runs again (within about a second, or their poll)."""
    audit_target(request, f"queue {name[:200]}")
    await queue_service.resume_queue(store, context.clock, name)
    return QueueOut.of(await queue_service.get_queue(store, context.clock, name))


@router.put("/queues/{name}/concurrency-limit", responses=responses(*AUTHENTICATED, 400, 422))
async def set_queue_limit(
    request: Request,
    name: QueueName,
    body: QueueLimitIn,
    principal: ClusterAdmin,
    context: Context,
    store: StoreDep,
) -> QueueOut:
    """At most ``max_running`` of the queue's runs at once, cluster-wide, from the next
    claims on (null removes the cap); runs already running are not stopped."""
    audit_target(request, f"queue {name[:200]}")
    await queue_service.set_queue_limit(store, name, body.max_running)
    return QueueOut.of(await queue_service.get_queue(store, context.clock, name))
