"""Events: the use cases the library, the API and the CLI share (ADR 0023).

``publish`` stores an event and, in the same transaction, makes one run per matching
subscription (rota.store.core.events). Subscriptions tie a job to an event name, with
an optional payload filter (the language is in rota.domain.events).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Collection
from typing import Any

from rota.clock import Clock
from rota.domain.events import (
    Event,
    NewEvent,
    Published,
    Subscription,
    WorkflowStarts,
    check_filter,
    matches,
)
from rota.domain.runs import check_name
from rota.domain.values import check_id, encode_json
from rota.errors import InvalidArgument
from rota.services import schedules
from rota.services import workflows as workflow_service
from rota.services.parameter_checks import off_loop
from rota.store.port import Store

MAX_PAGE = 200


def new_event(
    name: str, payload: Any = None, event_id: str | None = None, namespace: str = "default"
) -> NewEvent:
    """A validated event. Without ``event_id`` a random one is given: then a retried
    publish is a new event, so producers that may retry should pass their own id."""
    return NewEvent(
        name=name,
        event_id=uuid.uuid4().hex if event_id is None else event_id,
        payload_json=encode_json("payload", payload),
        namespace=namespace,
    )


async def publish(
    store: Store, clock: Clock, event: NewEvent, starts: WorkflowStarts | None = None
) -> Published:
    """Publish ``event``; ``starts`` (rota.services.workflows.starting) starts the workflows
    subscribed to it."""
    if starts is not None:
        starts = await checked_starts(store, event, starts)
    return await store.events.publish(event, clock.db_now(), starts)


async def checked_starts(store: Store, event: NewEvent, starts: WorkflowStarts) -> WorkflowStarts:
    """``starts`` with the payload of every workflow subscribed to ``event`` checked
    against its parameters: off the event loop, before the publish's transaction."""
    values = json.loads(event.payload_json)
    payloads: dict[tuple[str, int], Any] = {}
    for subscription in await store.events.list_subscriptions_to_events([event.namespace]):
        workflow = subscription.workflow
        if workflow is None or subscription.event_name != event.name:
            continue
        if not matches(subscription.filter, values):
            continue
        stored = await store.get_workflow(event.namespace, workflow)
        if stored is not None:  # a missing one fails the publish in its transaction
            checked = await off_loop(stored.definition.payload_of, values)
            payloads[(stored.name, stored.version)] = checked
    return dataclasses.replace(starts, payloads=payloads)


async def list_events(
    store: Store,
    *,
    namespaces: Collection[str] | None = None,
    namespace: str | None = None,
    name: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Event]:
    """Events newest first (keyset pages below ``before_id``), within ``namespaces``
    (None: every namespace), optionally of one ``namespace`` and one ``name``."""
    if namespace is not None:
        check_name("namespace", namespace)
    if name is not None:
        check_name("event name", name)
    if before_id is not None:
        check_id("before_id", before_id)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidArgument("limit", limit, f"an integer 1-{MAX_PAGE}")
    visible = sorted(namespaces) if namespaces is not None else None
    return await store.events.list_events(visible, namespace, name, before_id, limit)


async def subscribe(
    store: Store,
    clock: Clock,
    event_name: str,
    *,
    job: str | None = None,
    workflow: str | None = None,
    event_filter: dict[str, Any] | None = None,
    namespace: str = "default",
) -> Subscription:
    """Subscribe a job (in ``namespace``) or a workflow to ``event_name``; subscribing
    again replaces the filter. Only events published afterwards make runs."""
    check_name("event name", event_name)
    checked = check_filter(event_filter)
    if workflow is not None and job is None:
        await workflow_service.get(store, namespace, workflow)  # saved, or WorkflowNotFound
        return await store.events.subscribe_workflow(
            namespace, event_name, workflow, checked, clock.db_now()
        )
    found = await schedules.get_job(store, namespace, _one_target(job, workflow))
    return await store.events.subscribe_job(found, event_name, checked, clock.db_now())


async def unsubscribe(
    store: Store,
    event_name: str,
    *,
    job: str | None = None,
    workflow: str | None = None,
    namespace: str = "default",
) -> bool:
    """Whether the job or workflow was subscribed to ``event_name`` (it is not now)."""
    check_name("event name", event_name)
    if workflow is not None and job is None:
        return await store.events.unsubscribe_workflow(namespace, event_name, workflow)
    found = await schedules.get_job(store, namespace, _one_target(job, workflow))
    return await store.events.unsubscribe_job(found, event_name)


def _one_target(job: str | None, workflow: str | None) -> str:
    if job is None or workflow is not None:
        raise InvalidArgument(
            "subscriber", {"job": job, "workflow": workflow}, "exactly one of job and workflow"
        )
    return job


async def list_subscriptions(
    store: Store, namespaces: Collection[str] | None = None
) -> list[Subscription]:
    visible = sorted(namespaces) if namespaces is not None else None
    return await store.events.list_subscriptions_to_events(visible)
