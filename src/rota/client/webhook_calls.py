"""The HTTP client's webhook calls (``/api/v1/webhooks``), written once like the rest
(see rota.client.calls). Creation and rotation return the secret, once."""

from __future__ import annotations

from collections.abc import Sequence

from rota.client.calls import Call, JsonObject, Request, _query


def list_webhooks() -> Call[list[JsonObject]]:
    page = yield Request("GET", "/api/v1/webhooks", retryable=True)
    return list(page["items"])


def create_webhook(
    url: str,
    event_types: Sequence[str],
    namespace: str = "default",
    handler: str | None = None,
    queue: str | None = None,
) -> Call[JsonObject]:
    """The subscription, with its ``secret`` (shown only in this answer)."""
    body = {"url": url, "event_types": list(event_types), "namespace": namespace}
    body |= _query(handler=handler, queue=queue)
    made = yield Request("POST", "/api/v1/webhooks", body=body)
    return dict(made)


def get_webhook(subscription_id: int) -> Call[JsonObject]:
    found = yield Request("GET", f"/api/v1/webhooks/{subscription_id}", retryable=True)
    return dict(found)


def update_webhook(subscription_id: int, **changes: object) -> Call[JsonObject]:
    """``url``, ``event_types``, ``handler``, ``queue``, ``enabled``: those given change."""
    path = f"/api/v1/webhooks/{subscription_id}"
    updated = yield Request("PATCH", path, body=changes, retryable=True)
    return dict(updated)


def delete_webhook(subscription_id: int) -> Call[None]:
    yield Request("DELETE", f"/api/v1/webhooks/{subscription_id}", retryable=True)


def rotate_webhook_secret(subscription_id: int) -> Call[JsonObject]:
    path = f"/api/v1/webhooks/{subscription_id}/rotate-secret"
    rotated = yield Request("POST", path)
    return dict(rotated)


def webhook_deliveries(subscription_id: int, limit: int = 50) -> Call[list[JsonObject]]:
    path = f"/api/v1/webhooks/{subscription_id}/deliveries"
    page = yield Request("GET", path, {"limit": limit}, retryable=True)
    return list(page["items"])


def redeliver(delivery_id: int) -> Call[JsonObject]:
    path = f"/api/v1/webhooks/deliveries/{delivery_id}/redeliver"
    again = yield Request("POST", path, retryable=True)
    return dict(again)
