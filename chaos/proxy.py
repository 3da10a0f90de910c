"""A TCP proxy for partitions: listens on 127.0.0.1, forwards to PostgreSQL, and can
stop forwarding in both directions (a blackhole: bytes are held, as a network that
drops packets makes TCP retransmit them, and delivered once the partition heals) or
cut every connection at once (connections reset).

It runs its own event loop in a thread, so a scenario drives it with plain calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class PartitionProxy:
    def __init__(self, upstream_host: str = "127.0.0.1", upstream_port: int = 5432) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="chaos-proxy")
        self._open = asyncio.Event()  # set: forwarding; clear: blackholed
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    def start(self) -> int:
        self._thread.start()
        self.port = self._call(self._listen())
        return self.port

    def url(self, db_url: str) -> str:
        """``db_url`` with its host and port replaced by the proxy's."""
        scheme, _, rest = db_url.partition("://")
        credentials, _, location = rest.rpartition("@")
        _, _, database = location.partition("/")
        auth = f"{credentials}@" if credentials else ""
        return f"{scheme}://{auth}127.0.0.1:{self.port}/{database}"

    def partition(self) -> None:
        """From now on nothing gets through in either direction (held, not dropped)."""
        self._loop.call_soon_threadsafe(self._open.clear)

    def heal(self) -> None:
        self._loop.call_soon_threadsafe(self._open.set)

    def cut(self) -> None:
        """Reset every connection through the proxy (new ones are still accepted)."""
        self._call(self._close_all())

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    # -- inside the proxy's loop ----------------------------------------------
    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout=30)

    async def _listen(self) -> int:
        self._open.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(client_w)
        try:
            await self._open.wait()  # a partition also holds new connections
            server_r, server_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            self._writers.discard(client_w)
            return
        self._writers.add(server_w)
        await asyncio.gather(
            self._pipe(client_r, server_w), self._pipe(server_r, client_w), return_exceptions=True
        )
        for writer in (client_w, server_w):
            self._writers.discard(writer)
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._open.wait()
                writer.write(data)
                await writer.drain()
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _close_all(self) -> None:
        for writer in list(self._writers):
            transport = writer.transport
            if transport is not None:
                transport.abort()
        self._writers.clear()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._close_all()
