"""A local webhook receiver for tests: records every request it answers, can be taken
down and brought back on the same port, and can hold requests until released (to kill
a deliverer while it waits for the answer)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rota.domain.webhooks import verify


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []  # answered
        self.arrivals: list[str] = []  # the webhook-id of every request, as it arrives
        self.arrived = threading.Condition()
        self.holding = threading.Event()  # set: requests wait for release
        self.released = threading.Event()
        self.held = threading.Event()  # a request is being held
        self.status = 204
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["content-length"])
                body = self.rfile.read(length)
                if len(body) < length:
                    # The sender died mid-body (a SIGKILLed deliverer): a real receiver
                    # gets no whole request either, so nothing is recorded or answered.
                    return
                with receiver.arrived:
                    receiver.arrivals.append(self.headers["webhook-id"])
                if receiver.holding.is_set():
                    receiver.held.set()
                    receiver.released.wait(30)
                self.send_response(receiver.status)
                self.send_header("content-length", "0")
                self.end_headers()
                with receiver.arrived:
                    received = Received({k.lower(): v for k, v in self.headers.items()}, body)
                    receiver.received.append(received)
                    receiver.arrived.notify_all()

            def log_message(self, format: str, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def all_signed_by(self, secret: str) -> bool:
        return all(verify(secret, r.headers, r.body) for r in self.received)


@contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        receiver.stop()
