"""The HTTP client's event calls (``/api/v1/events``), written once like the rest (see
rota.client.calls)."""

from __future__ import annotations

import uuid
from typing import Any

from rota.client.calls import Call, JsonObject, Request, _query


def publish_event(
    name: str, payload: Any = None, event_id: str | None = None, namespace: str = "default"
) -> Call[JsonObject]:
    """``{"event", "created", "run_ids"}``. Without ``event_id`` one is drawn here, so a
    request retried after a dropped connection is still the same event."""
    body = {"name": name, "id": event_id or uuid.uuid4().hex, "payload": payload}
    published = yield Request(
        "POST", "/api/v1/events", {"namespace": namespace}, body=body, retryable=True
    )
    return dict(published)


def list_events(
    name: str | None = None,
    namespace: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Call[JsonObject]:
    """One page: ``{"items", "next_cursor"}``, newest first."""
    params = _query(name=name, namespace=namespace, limit=limit, cursor=cursor)
    page = yield Request("GET", "/api/v1/events", params, retryable=True)
    return dict(page)


def list_event_subscriptions() -> Call[list[JsonObject]]:
    page = yield Request("GET", "/api/v1/events/subscriptions", retryable=True)
    return list(page["items"])


def subscribe(
    event: str,
    job: str | None = None,
    event_filter: JsonObject | None = None,
    namespace: str = "default",
    workflow: str | None = None,
) -> Call[JsonObject]:
    """Subscribe a job, or a workflow the server registers, to ``event``."""
    body = {"event": event, "filter": event_filter or {}} | _query(job=job, workflow=workflow)
    path = "/api/v1/events/subscriptions"
    made = yield Request("PUT", path, {"namespace": namespace}, body=body, retryable=True)
    return dict(made)


def unsubscribe(
    event: str, job: str | None = None, namespace: str = "default", workflow: str | None = None
) -> Call[None]:
    params = {"event": event, "namespace": namespace} | _query(job=job, workflow=workflow)
    yield Request("DELETE", "/api/v1/events/subscriptions", params, retryable=True)
