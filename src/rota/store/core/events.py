"""The one SQL store: events, and the jobs subscribed to them.

A publish is one transaction: the event row (unique by namespace, name and event id)
and one run per matching subscription. A repeated publish finds the row taken, inserts
nothing and makes no run; the runs' idempotency keys (subscription, event id) are a
second guard. :func:`publish_in` takes any session, so the same code runs in the
store's own transaction and in a caller's (``app.publish(connection=...)``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from rota.domain.events import (
    Event,
    NewEvent,
    Published,
    Subscription,
    WorkflowStarts,
    event_run,
    matches,
)
from rota.domain.jobs import Job
from rota.domain.values import encode_json
from rota.domain.workflows import WorkflowInvalid
from rota.errors import StoreError, WorkflowNotFound
from rota.store.core.base import CoreBase, insert_runs
from rota.store.core.workflow_defs import stored_workflow_from_row
from rota.store.core.workflows import start_workflow_in
from rota.store.dialect import Row, Session
from rota.store.rows import job_from_row


def event_from_row(row: Row) -> Event:
    return Event(
        id=row["id"],
        namespace=row["namespace"],
        name=row["name"],
        event_id=row["event_id"],
        payload=row["payload"],
        published_at=row["published_at"],
        runs_created=row["runs_created"],
    )


def _filter_of(row: Row) -> dict[str, Any]:
    value = json.loads(row["filter"])
    return value if isinstance(value, dict) else {}


def subscription_from_row(row: Row, job_name: str | None) -> Subscription:
    return Subscription(
        id=row["id"],
        namespace=row["namespace"],
        event_name=row["event_name"],
        job_name=job_name,
        workflow=row["workflow"],
        filter=_filter_of(row),
        created_at=row["created_at"],
    )


async def publish_in(
    session: Session, event: NewEvent, aging_seconds: float, starts: WorkflowStarts | None
) -> Published:
    """Store ``event`` and make its subscribers' runs on ``session``; see the module.
    ``starts`` turns a subscribed workflow's name into its definition and steps; with
    none, or for a name it does not know, a publish that matches a workflow
    subscription fails whole (nothing written) rather than dropping that workflow."""
    key = {"namespace": event.namespace, "name": event.name, "event_id": event.event_id}
    inserted = await session.rows("insert_event", {**key, "payload": event.payload_json})
    if not inserted:
        [existing] = await session.rows("event_by_key", key)
        return Published(event_from_row(existing), created=False, run_ids=())
    stored = event_from_row(inserted[0])
    subscribers = [
        row
        for row in await session.rows("event_subscribers", key)
        if matches(_filter_of(row), stored.payload)
    ]
    runs = [
        event_run(_job(row), row["subscription_id"], event)
        for row in subscribers
        if row["workflow"] is None
    ]
    enqueued = await insert_runs(session, runs, aging_seconds, copy=False)
    workflow_runs = [
        await _start_workflow(session, row["workflow"], event, aging_seconds, starts)
        for row in subscribers
        if row["workflow"] is not None
    ]
    # A run whose key already held (the event was pruned and published again while its
    # run is kept) is found, not created: the count says what this publish made.
    created = sum(1 for e in enqueued if e.created) + len(workflow_runs)
    if created:
        await session.rows("set_event_runs", {"id": stored.id, "runs_created": created})
    stored = replace(stored, runs_created=created)
    run_ids = tuple(e.run_id for e in enqueued)
    return Published(stored, created=True, run_ids=run_ids, workflow_run_ids=tuple(workflow_runs))


def _job(row: Row) -> Job:
    # A job whose stored definition cannot be read fails the publish (JobUnreadable):
    # dropping its run silently would break "one run per subscription".
    return job_from_row(row, row["spec"])


async def _start_workflow(
    session: Session,
    name: str,
    event: NewEvent,
    aging_seconds: float,
    starts: WorkflowStarts | None,
) -> int:
    """Start the saved workflow ``name`` of the event's namespace, read in this
    transaction; its parameters' defaults fill the event's payload."""
    if starts is None:
        raise WorkflowInvalid(
            "workflow", name, "a workflow this publisher can start (it subscribes to the event)"
        )
    key = {"namespace": event.namespace, "name": name}
    rows = await session.rows("get_workflow", key)
    if not rows:
        raise WorkflowNotFound(event.namespace, name)
    stored = stored_workflow_from_row(rows[0])
    definition = stored.definition
    payload = starts.payload_for(stored, json.loads(event.payload_json))
    steps = starts.steps(definition, payload, event.namespace)
    payload_json = encode_json("payload", payload)
    return await start_workflow_in(
        session, definition, payload_json, steps, aging_seconds, event.namespace
    )


class CoreEvents(CoreBase):
    async def publish(
        self, event: NewEvent, now: datetime | None, starts: WorkflowStarts | None = None
    ) -> Published:
        return await self._d.in_transaction(
            now, lambda session: publish_in(session, event, self.aging_seconds, starts)
        )

    async def list_events(
        self,
        namespaces: Sequence[str] | None,
        namespace: str | None,
        name: str | None,
        before_id: int | None,
        limit: int,
    ) -> list[Event]:
        params = {
            "namespaces": list(namespaces) if namespaces is not None else None,
            "namespace": namespace,
            "name": name,
            "before_id": before_id,
            "limit": limit,
        }
        return [event_from_row(row) for row in await self._d.rows("list_events", params, None)]

    async def prune_events(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        return await self._prune("prune_events", older_than, limit, leader_term)

    async def subscribe_job(
        self, job: Job, event_name: str, event_filter: dict[str, Any], now: datetime | None
    ) -> Subscription:
        params = {
            "namespace": job.spec.namespace,
            "event_name": event_name,
            "job_id": job.id,
            "filter": json.dumps(event_filter, separators=(",", ":")),
        }
        rows = await self._d.write("subscribe_job", params, now)
        if not rows:
            raise StoreError(f"subscribing job {job.spec.name!r} returned no row")
        return subscription_from_row(rows[0], job.spec.name)

    async def unsubscribe_job(self, job: Job, event_name: str) -> bool:
        params = {"job_id": job.id, "event_name": event_name}
        return bool(await self._d.write("unsubscribe_job", params))

    async def subscribe_workflow(
        self,
        namespace: str,
        event_name: str,
        workflow: str,
        event_filter: dict[str, Any],
        now: datetime | None,
    ) -> Subscription:
        params = {
            "namespace": namespace,
            "event_name": event_name,
            "workflow": workflow,
            "filter": json.dumps(event_filter, separators=(",", ":")),
        }
        rows = await self._d.write("subscribe_workflow", params, now)
        if not rows:
            raise StoreError(f"subscribing workflow {workflow!r} returned no row")
        return subscription_from_row(rows[0], None)

    async def unsubscribe_workflow(self, namespace: str, event_name: str, workflow: str) -> bool:
        params = {"namespace": namespace, "event_name": event_name, "workflow": workflow}
        return bool(await self._d.write("unsubscribe_workflow", params))

    async def list_subscriptions_to_events(
        self, namespaces: Sequence[str] | None
    ) -> list[Subscription]:
        params = {"namespaces": list(namespaces) if namespaces is not None else None}
        rows = await self._d.rows("list_event_subscriptions", params, None)
        return [subscription_from_row(row, row["job_name"]) for row in rows]
