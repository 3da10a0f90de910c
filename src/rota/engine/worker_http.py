"""``rota worker --http HOST:PORT``: /metrics, /health/live and /health/ready for a
standalone worker (off by default).

A few lines of HTTP/1.1 on asyncio's own server, on the worker's event loop: no web
framework (a worker-only install needs none) and no second set of signal handlers
(uvicorn installs its own, which would fight the worker's graceful shutdown). GET
only, one request per connection, small bounded reads.

Ready means: the database answers, this worker is registered, and it is not draining.
/metrics needs the scrape token (ROTA_METRICS_TOKEN) when one is set; without one it
is served only on a loopback address (rota.observe.scrape).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog

from rota.config.sources import Sources
from rota.domain.values import whole_number
from rota.domain.workers import WorkerState
from rota.endpoint import is_loopback
from rota.errors import InvalidArgument, RotaError, StoreUnavailable
from rota.observe import exposition
from rota.observe.scrape import bearer_matches, check_scrape_token
from rota.redact import Secret
from rota.store.port import Store
from rota.supervise import CANCEL_WAIT_SECONDS, cancel_and_wait, watched
from rota.tls import ServerTls

log = structlog.get_logger("rota.engine.worker_http")
MAX_REQUEST_BYTES = 8192
READ_TIMEOUT_SECONDS = 5.0
ADDRESS_RULE = "HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464 (port 0-65535; 0 picks a free one)"


class AddressUnusable(RotaError):
    """The --http address is taken or cannot be bound here."""


@dataclass(frozen=True)
class HttpAddress:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> HttpAddress:
        host, sep, port_text = text.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        try:
            port = whole_number("--http", port_text, 0, 65535)
        except InvalidArgument:
            raise InvalidArgument("--http", text, ADDRESS_RULE) from None
        if not sep or not host:
            raise InvalidArgument("--http", text, ADDRESS_RULE)
        return cls(host, port)

    def bind(self) -> socket.socket:
        """Bind now, before the worker starts, so a taken port is one clear error."""
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
            family, kind, proto, _, address = infos[0]
            sock = socket.socket(family, kind, proto)
        except OSError as exc:
            raise AddressUnusable(
                f"--http {self.host}:{self.port}: {exc.strerror or exc}"
            ) from None
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(64)
        except OSError as exc:
            sock.close()
            raise AddressUnusable(
                f"--http {self.host}:{self.port} cannot be used: {exc.strerror or exc}"
            ) from None
        sock.setblocking(False)
        return sock


@dataclass(frozen=True)
class WorkerHttp:
    """A bound listening socket and who may scrape it."""

    sock: socket.socket
    metrics_token: Secret | None
    loopback: bool
    tls: ssl.SSLContext | None = None  # set: HTTPS only (rota.tls)

    @classmethod
    def open(
        cls, address: str, metrics_token: str | None = None, tls: ServerTls | None = None
    ) -> WorkerHttp:
        parsed = HttpAddress.parse(address)
        token = check_scrape_token(metrics_token) if metrics_token else None
        context = tls.context() if tls else None  # before binding: a bad file binds nothing
        http = cls(parsed.bind(), token, is_loopback(parsed.host), context)
        if token is None and not http.loopback:
            log.warning(
                "/metrics is refused on a non-loopback address without ROTA_METRICS_TOKEN; "
                "the health probes are served",
                address=address,
            )
        return http

    @classmethod
    def from_env(cls, address: str, tls: ServerTls | None = None) -> WorkerHttp:
        """The scrape token from metrics.token in rota.yaml, ROTA_METRICS_TOKEN or the
        file ROTA_METRICS_TOKEN_FILE names."""
        return cls.open(address, Sources.read().value("metrics.token") or None, tls)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])


async def unready_reasons(store: Store, node_id: str) -> list[str]:
    try:
        workers = await store.list_workers()
    except StoreUnavailable as exc:
        return [f"database unreachable: {exc}"]
    except RotaError as exc:
        return [str(exc)]
    mine = next((w for w in workers if w.node_id == node_id), None)
    if mine is None:
        return [f"worker {node_id} is not registered"]
    if mine.state is not WorkerState.ACTIVE:
        return [f"worker {node_id} is {mine.state.value}"]
    return []


@contextlib.asynccontextmanager
async def serving(http: WorkerHttp | None, store: Store, node_id: str) -> AsyncIterator[None]:
    """Serve while the block runs (nothing when ``http`` is None)."""
    if http is None:
        yield
        return
    handler = _Handler(http, store, node_id)
    server = await asyncio.start_server(handler.handle, sock=http.sock, ssl=http.tls)
    task = watched(server.serve_forever(), name="rota-worker-http")
    log.info("worker http serving", port=http.port, node_id=node_id)
    try:
        yield
    finally:
        server.close()
        await cancel_and_wait(task, CANCEL_WAIT_SECONDS)


class _Handler:
    def __init__(self, http: WorkerHttp, store: Store, node_id: str) -> None:
        self.http = http
        self.store = store
        self.node_id = node_id

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(
                reader.readuntil(b"\r\n\r\n"), timeout=READ_TIMEOUT_SECONDS
            )
            status, content_type, body = await self.respond(head[:MAX_REQUEST_BYTES])
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            status, content_type, body = 400, "text/plain", b"bad request\n"
        try:
            writer.write(
                f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (ConnectionError, OSError):
            pass  # the client went away; nothing to tell it
        finally:
            writer.close()

    async def respond(self, head: bytes) -> tuple[int, str, bytes]:
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path = rest.partition(" ")[0].partition("?")[0]
        if method != "GET":
            return 405, "text/plain", b"only GET\n"
        if path == "/health/live":
            return _json(200, {"status": "live"})
        if path == "/health/ready":
            reasons = await unready_reasons(self.store, self.node_id)
            if reasons:
                return _json(503, {"status": "not ready", "detail": "; ".join(reasons)})
            return _json(200, {"status": "ready"})
        if path == "/metrics":
            return self.metrics(_header(lines, "authorization"))
        return 404, "text/plain", b"not found: /metrics, /health/live, /health/ready\n"

    def metrics(self, authorization: str | None) -> tuple[int, str, bytes]:
        token = self.http.metrics_token
        if token is None and not self.http.loopback:
            return 403, "text/plain", b"set ROTA_METRICS_TOKEN to scrape a non-loopback worker\n"
        if token is not None and not bearer_matches(authorization, token):
            return 401, "text/plain", b"this needs Authorization: Bearer <ROTA_METRICS_TOKEN>\n"
        return 200, exposition.CONTENT_TYPE, exposition.render(None)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}


def _json(status: int, body: dict[str, str]) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(body).encode() + b"\n"


def _header(lines: list[str], name: str) -> str | None:
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None
