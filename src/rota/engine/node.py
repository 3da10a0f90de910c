"""One rota node: a worker, a leader candidate, or both, on one store.

The one place that assembles a node's long-lived duties, used by ``rota worker`` and
``App.run_worker`` (worker and leader), ``rota server`` (worker and leader, or with
``--no-worker`` a leader candidate only, or with ``--no-leader`` a worker only).
Everything it starts is supervised: the worker supervises its own loops, and the
leader candidacy (:func:`rota.engine.housekeeping.stand_for_leader`) supervises the election,
which supervises each duty. One :class:`~rota.supervise.Restarts` counts the failures
of them all, so a node's health is read in one place.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from rota.clock import Clock
from rota.config import Settings
from rota.domain.runs import check_name
from rota.engine.housekeeping import stand_for_leader
from rota.engine.webhook_delivery import deliver_until
from rota.engine.worker import Worker
from rota.engine.worker_options import WorkerOptions
from rota.handlers import Registry
from rota.store.port import Store
from rota.supervise import CANCEL_WAIT_SECONDS, Restarts, cancel_and_wait, watched

log = structlog.get_logger("rota.engine.node")


@dataclass(frozen=True)
class NodeRoles:
    """What a node does: work runs (``worker`` options, or None for an API-only or
    leader-only node) and stand for leader."""

    node_id: str
    worker: WorkerOptions | None
    leader: bool

    def __post_init__(self) -> None:
        check_name("node_id", self.node_id)

    @classmethod
    def working(cls, options: WorkerOptions) -> NodeRoles:
        """A worker node; it stands for leader unless ``options.leader`` is False."""
        return cls(options.node_id, options, options.leader)


class Node:
    def __init__(
        self,
        store: Store,
        registry: Registry,
        settings: Settings,
        clock: Clock,
        roles: NodeRoles,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.roles = roles
        # Failures of every background task of this node, by task name (for metrics).
        self.restarts = Restarts()
        self.worker: Worker | None = None
        if roles.worker is not None:
            self.worker = Worker(
                store, registry, settings, clock, roles.worker, restarts=self.restarts
            )

    async def run(self, stop: asyncio.Event) -> None:
        """Run the node's duties until ``stop`` is set. The worker shuts down first
        (finishing or handing back its runs), then the node leaves the election, so a
        stopping node keeps its cluster planned and reaped until it is gone."""
        leading = None
        if self.roles.leader:
            leading = watched(
                stand_for_leader(
                    self.store, self.settings, self.clock, self.roles.node_id, self.restarts
                ),
                name="rota-leader",
            )
        # Every node delivers webhooks (a lease per delivery; ADR 0017).
        delivering = watched(
            deliver_until(self.store.webhooks, self.settings, self.clock, stop, self.restarts),
            name="rota-webhooks",
        )
        log.info(
            "node started",
            node_id=self.roles.node_id,
            worker=self.worker is not None,
            leader=self.roles.leader,
        )
        try:
            if self.worker is not None:
                await self.worker.run(stop)
            else:
                await stop.wait()
        finally:
            await cancel_and_wait(delivering, CANCEL_WAIT_SECONDS)
            await cancel_and_wait(leading, CANCEL_WAIT_SECONDS)
