"""The edge of every request, as plain ASGI (no per-request task or body copy beyond
what the limit needs): a correlation id taken or made, security headers, and the body
size limit. Runs outside FastAPI's routing, so its 413 is a problem body too."""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import structlog
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rota.api.problems import problem_response
from rota.domain.values import whole_number
from rota.errors import InvalidArgument

CORRELATION_HEADER = "X-Correlation-ID"
INTERNAL = "the server failed to handle this request"
log = structlog.get_logger("rota.api")
_CORRELATION_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "geolocation=(), camera=(), microphone=()",
    "Cache-Control": "no-store",
}
# Only on a response that went out over TLS (served directly, or https at a trusted
# proxy, which uvicorn turns into the scope's scheme): over plain HTTP a browser
# ignores it, and a header promising HTTPS where there is none misleads whoever reads it.
HSTS = ("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
# The JSON API needs no content at all; the interactive docs page loads its UI bundle.
API_CSP = "default-src 'none'; frame-ancestors 'none'"
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; img-src 'self' data: "
    "https://fastapi.tiangolo.com; frame-ancestors 'none'"
)


def correlation_id(headers: Headers) -> str:
    """The caller's id if it is a sane token; otherwise a new one (a hostile value
    must not reach our logs or runs)."""
    given = headers.get(CORRELATION_HEADER, "")
    return given if _CORRELATION_ID.match(given) else uuid.uuid4().hex


class EdgeMiddleware:
    def __init__(self, app: ASGIApp, body_limit_bytes: int) -> None:
        self.app = app
        self.body_limit = body_limit_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cid = correlation_id(headers)
        state: MutableMapping[str, Any] = scope.setdefault("state", {})
        state["correlation_id"] = cid
        csp = DOCS_CSP if scope["path"] in ("/docs", "/redoc") else API_CSP
        started = False
        sending = _with_headers(send, cid, csp, over_tls=scope.get("scheme") == "https")

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await sending(message)

        with structlog.contextvars.bound_contextvars(correlation_id=cid):
            body = await self._read_body(scope, receive, tracked, headers)
            if body is None:
                return
            try:
                await self.app(scope, _replay(body, receive), tracked)
            except Exception:
                # A bug, not a refusal: log it with its correlation id and answer a
                # problem without details (never a traceback).
                log.exception("unhandled error", method=scope["method"], path=scope["path"])
                if not started:
                    await self._refuse(scope, receive, tracked, 500, INTERNAL)

    async def _read_body(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers
    ) -> bytes | None:
        """The whole body, or None after answering 400/413 for it."""
        declared = headers.get("content-length")
        if declared is not None:
            try:
                length = whole_number("Content-Length", declared, 0, 2**63 - 1)
            except InvalidArgument:
                await self._refuse(scope, receive, send, 400, "Content-Length is not a number")
                return None
            if length > self.body_limit:
                await self._refuse(scope, receive, send, 413, self._too_large())
                return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.body_limit:
                await self._refuse(scope, receive, send, 413, self._too_large())
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> str:
        return f"the request body is larger than the limit of {self.body_limit} bytes"

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, why: str) -> None:
        response = problem_response(Request(scope, receive), status, why)
        await response(scope, receive, send)


def _with_headers(send: Send, cid: str, csp: str, *, over_tls: bool) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers[CORRELATION_HEADER] = cid
            headers.setdefault("Content-Security-Policy", csp)  # the dashboard sets its own
            for name, value in SECURITY_HEADERS.items():
                headers.setdefault(name, value)
            if over_tls:
                headers.setdefault(*HSTS)
        await send(message)

    return sending


def _replay(body: bytes, receive: Receive) -> Callable[[], Awaitable[Message]]:
    sent = False

    async def replaying() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replaying
