"""Events: publish (events:write), list (jobs:read), and the jobs subscribed to them
(jobs:manage to change, jobs:read to list). Namespaced like jobs (ADR 0023)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from rota.api import pagination
from rota.api.auth import Manager, Publisher, Reader
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.events import (
    EventOut,
    EventPage,
    EventPublish,
    EventPublished,
    EventSubscriptionList,
    EventSubscriptionOut,
    SubscriptionPut,
)
from rota.api.schemas.fields import Name
from rota.domain.access import Principal
from rota.errors import InvalidArgument
from rota.services import events

router = APIRouter(prefix="/api/v1/events", tags=["events"])
CURSOR = "event"
NamespaceQuery = Annotated[Name, Query(description="The namespace of the event or job.")]


def _reachable(principal: Principal, namespace: str) -> None:
    if not principal.can_see(namespace):
        raise InvalidArgument("namespace", namespace, "a namespace your credentials cover")


PUBLISHED_BEFORE: dict[int | str, dict[str, Any]] = {
    200: {"model": EventPublished, "description": "Published before: no new run"}
}


@router.post("", status_code=201, responses={**responses(*AUTHENTICATED, 400), **PUBLISHED_BEFORE})
async def publish_event(
    request: Request,
    response: Response,
    principal: Publisher,
    context: Context,
    store: StoreDep,
    body: EventPublish,
    namespace: NamespaceQuery = "default",
) -> EventPublished:
    """Publish an event: each job subscribed to its name whose filter matches gets one
    run, in the same transaction. 201 when stored; 200 when the same name and id were
    published before (nothing new is created)."""
    audit_target(request, f"event {body.name}", namespace)
    _reachable(principal, namespace)
    event = events.new_event(body.name, body.payload, body.id, namespace)
    starts = context.rota_app.workflow_starts()
    published = await events.publish(store, context.clock, event, starts)
    if not published.created:
        response.status_code = 200
    return EventPublished.of(published)


@router.get("", responses=responses(*AUTHENTICATED, 400))
async def list_events(
    principal: Reader,
    store: StoreDep,
    namespace: Annotated[Name | None, Query(description="Only this namespace.")] = None,
    name: Annotated[Name | None, Query(description="Only events of this name.")] = None,
    limit: Annotated[int, Query(ge=1, le=events.MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> EventPage:
    """Published events the caller can see, newest first, in keyset pages. Events are
    kept for ROTA_EVENT_RETENTION_SECONDS (7 days by default)."""
    found = await events.list_events(
        store,
        namespaces=principal.namespaces,
        namespace=namespace,
        name=name,
        before_id=pagination.decode(CURSOR, cursor),
        limit=limit,
    )
    return EventPage(
        items=[EventOut.of(event) for event in found],
        next_cursor=pagination.next_cursor(CURSOR, [e.id for e in found], limit),
    )


@router.get("/subscriptions", responses=responses(*AUTHENTICATED))
async def list_event_subscriptions(principal: Reader, store: StoreDep) -> EventSubscriptionList:
    """Which jobs run on which events, in the namespaces the caller can see."""
    found = await events.list_subscriptions(store, principal.namespaces)
    return EventSubscriptionList(items=[EventSubscriptionOut.of(s) for s in found])


@router.put("/subscriptions", responses=responses(*AUTHENTICATED, 400, 404))
async def subscribe_job_to_event(
    request: Request,
    principal: Manager,
    context: Context,
    store: StoreDep,
    body: SubscriptionPut,
    namespace: NamespaceQuery = "default",
) -> EventSubscriptionOut:
    """Subscribe a job, or a saved workflow, to an event name (putting
    it again replaces the filter). Only events published afterwards run it."""
    target = f"job {namespace}/{body.job}" if body.job else f"workflow {body.workflow}"
    audit_target(request, f"{target} on event {body.event}", namespace)
    _reachable(principal, namespace)
    subscription = await events.subscribe(
        store,
        context.clock,
        body.event,
        job=body.job,
        workflow=body.workflow,
        event_filter=body.filter,
        namespace=namespace,
    )
    return EventSubscriptionOut.of(subscription)


@router.delete("/subscriptions", status_code=204, responses=responses(*AUTHENTICATED, 404))
async def unsubscribe_job_from_event(
    request: Request,
    principal: Manager,
    store: StoreDep,
    event: Annotated[Name, Query(description="The event name.")],
    job: Annotated[Name | None, Query(description="The subscribed job.")] = None,
    workflow: Annotated[Name | None, Query(description="The subscribed workflow.")] = None,
    namespace: NamespaceQuery = "default",
) -> Response:
    """The job or workflow no longer runs on the event (204 whether or not it was
    subscribed)."""
    audit_target(request, f"{job or workflow} on event {event}", namespace)
    _reachable(principal, namespace)
    await events.unsubscribe(store, event, job=job, workflow=workflow, namespace=namespace)
    return Response(status_code=204)
