"""The cluster: workers, the leader, registered handlers, and cron previews.

Who may act here: reading the cluster's state needs only jobs:read (a team needs to
know whether workers are up); acting on it (drain, resume) changes what every
namespace gets, so it needs jobs:admin *and* a caller who reaches every namespace
(``ClusterAdmin``). docs/security.md."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Path, Query, Request

from rota import payloads
from rota.api.auth import ClusterAdmin, Reader
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.cluster import (
    CronInstant,
    CronPreview,
    HandlerList,
    HandlerOut,
    LeaderOut,
    LeaderState,
    WorkerList,
    WorkerOut,
)
from rota.api.schemas.fields import Name
from rota.services import cluster as cluster_service
from rota.services import schedules

router = APIRouter(prefix="/api/v1", tags=["cluster"])


@router.get("/workers", responses=responses(*AUTHENTICATED))
async def list_workers(principal: Reader, context: Context, store: StoreDep) -> WorkerList:
    """Registered workers with their state and how long ago each last checked in."""
    seen = await cluster_service.workers_seen(store, context.clock)
    return WorkerList(items=[WorkerOut.of(s.worker, s.now) for s in seen])


@router.post("/workers/{node_id}/drain", status_code=202, responses=responses(*AUTHENTICATED, 404))
async def drain_worker(
    request: Request,
    node_id: Annotated[Name, Path()],
    principal: ClusterAdmin,
    context: Context,
    store: StoreDep,
) -> WorkerOut:
    """The worker stops claiming and finishes what it holds."""
    audit_target(request, f"worker {node_id}")
    seen = await cluster_service.drain_worker(store, context.clock, node_id)
    return WorkerOut.of(seen.worker, seen.now)


@router.post("/workers/{node_id}/resume", responses=responses(*AUTHENTICATED, 404))
async def resume_worker(
    request: Request,
    node_id: Annotated[Name, Path()],
    principal: ClusterAdmin,
    context: Context,
    store: StoreDep,
) -> WorkerOut:
    """A drained worker claims again."""
    audit_target(request, f"worker {node_id}")
    seen = await cluster_service.resume_worker(store, context.clock, node_id)
    return WorkerOut.of(seen.worker, seen.now)


@router.get("/leader", responses=responses(*AUTHENTICATED))
async def leader(principal: Reader, store: StoreDep) -> LeaderState:
    """Who leads (plans schedules, reaps expired leases), since when, and the term."""
    info = await cluster_service.leader(store)
    if info is None:
        return LeaderState(leader=None)
    return LeaderState(
        leader=LeaderOut(
            holder=info.holder, term=info.term, since=info.acquired_at, expires_at=info.expires_at
        )
    )


@router.get("/handlers", responses=responses(*AUTHENTICATED))
async def list_handlers(principal: Reader, context: Context) -> HandlerList:
    """The handlers this server knows, each with the JSON Schema of its payload."""
    registry = context.rota_app.registry
    items = []
    for name in registry.names():
        spec = registry.require(name)
        items.append(
            HandlerOut(
                name=spec.name,
                queue=spec.queue,
                max_attempts=spec.max_attempts,
                timeout_seconds=spec.timeout,
                priority=spec.priority,
                payload_schema=payloads.payload_schema(spec),
            )
        )
    return HandlerList(items=items)


@router.get("/cron/preview", responses=responses(*AUTHENTICATED))
async def cron_preview(
    principal: Reader,
    context: Context,
    expression: Annotated[str, Query(min_length=1, max_length=200, examples=["0 2 * * *"])],
    timezone: Annotated[str, Query(min_length=1, max_length=64)] = "UTC",
    count: Annotated[int, Query(ge=1, le=100)] = 10,
) -> CronPreview:
    """The next ``count`` instants ``expression`` fires at in ``timezone``."""
    instants = schedules.cron_preview(expression, timezone, count, after=context.clock.now())
    zone = ZoneInfo(timezone)  # valid: cron_preview checked it
    return CronPreview(
        expression=expression,
        timezone=timezone,
        instants=[CronInstant(utc=t, local=_local(t, zone)) for t in instants],
    )


def _local(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone)
