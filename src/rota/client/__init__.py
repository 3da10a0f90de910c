"""rota's HTTP client, for services that start and watch work over HTTP rather than
through the database (and for the ``rota`` CLI).

``RotaClient`` (sync) and ``AsyncRotaClient`` (async) have the same methods, listed once
each below; every call is implemented once, without I/O, in ``rota.client.calls``.
Problem responses raise :class:`ApiError` (``status``, ``type``, ``detail``); a server that
cannot be reached raises :class:`ServerUnreachable` (:class:`CertificateRefused` when its
TLS certificate does not verify; ``ca_file=`` names the CA to trust instead of the
system's). Reads and idempotent writes are retried after a dropped connection or a
502/503/504; enqueue and trigger send an ``Idempotency-Key`` (made up when not given)
so that a retry never starts work twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from rota.client import (
    backfill_calls,
    bulk_calls,
    calls,
    event_calls,
    queue_calls,
    webhook_calls,
    workflow_calls,
)
from rota.client.calls import JsonObject, RunNotFinished
from rota.client.doors import (
    ApiError,
    AsyncDoor,
    CertificateRefused,
    ServerUnreachable,
    SyncDoor,
    door_call,
)

__all__ = [
    "ApiError",
    "AsyncRotaClient",
    "CertificateRefused",
    "RotaClient",
    "RunNotFinished",
    "ServerUnreachable",
]


class _Calls:
    """Every call, listed once for both clients (see ``door_call``)."""

    list_jobs = door_call(calls.list_jobs)
    get_job = door_call(calls.get_job)
    create_job = door_call(calls.create_job)
    update_job = door_call(calls.update_job)
    delete_job = door_call(calls.delete_job)
    set_paused = door_call(calls.set_paused)
    pause_job = door_call(calls.pause_job)
    resume_job = door_call(calls.resume_job)
    trigger = door_call(calls.trigger)
    enqueue = door_call(calls.enqueue)
    list_runs = door_call(calls.list_runs)
    get_run = door_call(calls.get_run)
    run_logs = door_call(calls.run_logs)
    list_workflow_runs = door_call(calls.list_workflow_runs)
    get_workflow_run = door_call(calls.get_workflow_run)
    workflow_run_graph = door_call(calls.workflow_run_graph)
    cancel_workflow_run = door_call(calls.cancel_workflow_run)
    save_workflow = door_call(workflow_calls.save_workflow)
    list_workflows = door_call(workflow_calls.list_workflows)
    get_workflow = door_call(workflow_calls.get_workflow)
    start_workflow = door_call(workflow_calls.start_workflow)
    cancel_run = door_call(calls.cancel_run)
    requeue_run = door_call(calls.requeue_run)
    wait_for = door_call(calls.wait_for)
    list_dead = door_call(calls.list_dead)
    replay_dead = door_call(calls.replay_dead)
    preview_bulk = door_call(bulk_calls.preview_bulk)
    run_bulk = door_call(bulk_calls.run_bulk)
    list_workers = door_call(calls.list_workers)
    drain_worker = door_call(calls.drain_worker)
    resume_worker = door_call(calls.resume_worker)
    leader = door_call(calls.leader)
    list_queues = door_call(queue_calls.list_queues)
    get_queue = door_call(queue_calls.get_queue)
    pause_queue = door_call(queue_calls.pause_queue)
    resume_queue = door_call(queue_calls.resume_queue)
    set_queue_limit = door_call(queue_calls.set_queue_limit)
    dev_token = door_call(calls.dev_token)
    list_webhooks = door_call(webhook_calls.list_webhooks)
    create_webhook = door_call(webhook_calls.create_webhook)
    get_webhook = door_call(webhook_calls.get_webhook)
    update_webhook = door_call(webhook_calls.update_webhook)
    delete_webhook = door_call(webhook_calls.delete_webhook)
    rotate_webhook_secret = door_call(webhook_calls.rotate_webhook_secret)
    webhook_deliveries = door_call(webhook_calls.webhook_deliveries)
    redeliver = door_call(webhook_calls.redeliver)
    backfill_job = door_call(backfill_calls.backfill_job)
    publish_event = door_call(event_calls.publish_event)
    list_events = door_call(event_calls.list_events)
    list_event_subscriptions = door_call(event_calls.list_event_subscriptions)
    subscribe = door_call(event_calls.subscribe)
    unsubscribe = door_call(event_calls.unsubscribe)


class RotaClient(_Calls, SyncDoor):
    """``with RotaClient("http://127.0.0.1:5017", token) as rota: rota.enqueue(...)``"""

    def __enter__(self) -> RotaClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def iter_runs(self, **filters: Any) -> Iterator[JsonObject]:
        """Every run matching ``filters`` (those of :meth:`list_runs`), page by page."""
        return self.pages(lambda cursor: calls.list_runs(**filters, cursor=cursor))

    def iter_dead(self, **filters: Any) -> Iterator[JsonObject]:
        """Every dead-lettered run matching ``filters``, page by page."""
        return self.pages(lambda cursor: calls.list_dead(**filters, cursor=cursor))


class AsyncRotaClient(_Calls, AsyncDoor):
    """``async with AsyncRotaClient(url, token) as rota: await rota.enqueue(...)``"""

    async def __aenter__(self) -> AsyncRotaClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def iter_runs(self, **filters: Any) -> AsyncIterator[JsonObject]:
        """Every run matching ``filters`` (those of :meth:`list_runs`), page by page."""
        return self.pages(lambda cursor: calls.list_runs(**filters, cursor=cursor))

    def iter_dead(self, **filters: Any) -> AsyncIterator[JsonObject]:
        """Every dead-lettered run matching ``filters``, page by page."""
        return self.pages(lambda cursor: calls.list_dead(**filters, cursor=cursor))
