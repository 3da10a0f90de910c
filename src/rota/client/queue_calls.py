"""The HTTP client's queue calls (``/api/v1/queues``, ADR 0035), written once like the
rest (see rota.client.calls). Pausing, resuming and setting a cap are idempotent: safe
to retry."""

from __future__ import annotations

from urllib.parse import quote

from rota.client.calls import Call, JsonObject, Request


def _path(name: str, action: str = "") -> str:
    return f"/api/v1/queues/{quote(name, safe='')}{action}"


def list_queues() -> Call[list[JsonObject]]:
    """Every queue: depth by state, oldest due age, recent throughput and failure rate,
    workers, whether it is paused, and its concurrency limit."""
    page = yield Request("GET", "/api/v1/queues", retryable=True)
    return list(page["items"])


def get_queue(name: str) -> Call[JsonObject]:
    queue = yield Request("GET", _path(name), retryable=True)
    return dict(queue)


def pause_queue(name: str) -> Call[JsonObject]:
    """Every worker stops claiming the queue within about a second; held runs finish."""
    queue = yield Request("POST", _path(name, "/pause"), retryable=True)
    return dict(queue)


def resume_queue(name: str) -> Call[JsonObject]:
    queue = yield Request("POST", _path(name, "/resume"), retryable=True)
    return dict(queue)


def set_queue_limit(name: str, max_running: int | None) -> Call[JsonObject]:
    """At most ``max_running`` of the queue's runs at once (None: no cap)."""
    body = {"max_running": max_running}
    path = _path(name, "/concurrency-limit")
    queue = yield Request("PUT", path, body=body, retryable=True)
    return dict(queue)
