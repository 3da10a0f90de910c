"""An App at work: a worker node on this App's handlers (rota.engine.node)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterable
from typing import Any

from rota import logs
from rota.app.base import AppBase
from rota.engine import loops
from rota.engine.node import Node, NodeRoles
from rota.engine.worker import DEFAULT_CONCURRENCY, Worker, WorkerOptions
from rota.engine.worker_http import WorkerHttp, serving
from rota.errors import InvalidArgument
from rota.supervise import Restarts, until_reachable


class AppWorking(AppBase):
    """Running a worker (blocking, or on the running loop) and building nodes."""

    def run_worker(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        node_id: str | None = None,
        queues: Iterable[str] | None = None,
        tags: Iterable[str] = (),
        http: WorkerHttp | None = None,
        loop: str = "auto",
    ) -> None:
        """Work until SIGTERM or SIGINT, then shut down gracefully. Blocking. ``http``:
        serve /metrics and health probes beside the worker (``rota worker --http``).
        ``loop``: auto (uvloop when installed), uvloop or asyncio (rota.engine.loops)."""
        options = self.worker_options(concurrency, node_id, queues, tags)

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            try:
                # A connection dropped while the store opens (and migrates) is retried.
                store = await until_reachable(
                    "open-store",
                    self.store,
                    Restarts(),
                    within=self.settings.start_up_retry_seconds,
                )
                async with serving(http, store, options.node_id):
                    await self.work(stop, options)
            finally:
                await self.aclose()

        with logs.default_setup():
            loops.run(main(), loop)

    def worker_options(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        node_id: str | None = None,
        queues: Iterable[str] | None = None,
        tags: Iterable[str] = (),
    ) -> WorkerOptions:
        for name, value in (("queues", queues), ("tags", tags)):
            if isinstance(value, str):
                raise InvalidArgument(name, value, f"a list of {name[:-1]} names")
        kwargs: dict[str, Any] = {
            "concurrency": concurrency,
            "queues": tuple(queues or ()),
            "tags": tuple(tags),
        }
        if node_id is not None:
            kwargs["node_id"] = node_id
        return WorkerOptions(**kwargs)

    async def work(self, stop: asyncio.Event, options: WorkerOptions | None = None) -> Worker:
        """Run a worker node on the current event loop until ``stop`` is set: the worker,
        and (unless ``options.leader`` is False) a leader candidate beside it."""
        node = await self.node(NodeRoles.working(options or WorkerOptions()))
        await node.run(stop)
        assert node.worker is not None  # a working node always has one
        return node.worker

    async def node(self, roles: NodeRoles) -> Node:
        """A node with ``roles`` (rota.engine.node) on this App's handlers, settings, clock and
        the running loop's store; ``await node.run(stop)`` runs it."""
        return Node(await self.store(), self.registry, self.settings, self.clock, roles)
