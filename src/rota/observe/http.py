"""Requests by route template and status, and their latency: an ASGI middleware, so it
sees every response (problems, 404s) exactly as the client got it."""

from __future__ import annotations

import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rota.observe import hooks, tracing

UNMATCHED = "unmatched"  # no route: the path itself is the client's, never a label


class HttpMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless a response starts: an error escaped every handler

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with tracing.serving_request(scope) as span:
            try:
                await self.app(scope, receive, record_status)
            finally:
                template = _template(scope)
                hooks.http_request(template, scope["method"], status, time.perf_counter() - started)
                tracing.name_request(span, scope["method"], template, status)


def _template(scope: Scope) -> str:
    route: Any = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    return str(template) if template else UNMATCHED
