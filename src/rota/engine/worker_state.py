"""The worker's state: what it holds, its slots, and what it reaches the store with.

Every part of the worker (rota.engine.worker) shares it: the claim loop
(worker_claims.py), the runs it starts (worker_runs.py) and the lease renewal
(worker_leases.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import structlog

from rota.bootstrap import handler_transactions
from rota.clock import Clock
from rota.config import Settings
from rota.context import RunContext
from rota.domain.runs import ClaimedRun, Lease, Outcome
from rota.engine.live_logs import LiveLogs
from rota.engine.outcomes import OutcomeWriter
from rota.engine.worker_options import WorkerOptions
from rota.handlers import Registry
from rota.store.port import Store
from rota.supervise import Restarts

log = structlog.get_logger("rota.engine.worker")


@dataclass
class Held:
    """A run this worker holds a lease on, from claim until its outcome is written."""

    claimed: ClaimedRun
    ctx: RunContext
    lost: bool = False  # the heartbeat found another fence: discard whatever we produce
    released: bool = False  # shutting down: hand it back instead of recording an outcome
    # The outcome is with the writer: a renewal racing the write may find the run already
    # finished, which is not a lost lease; the write itself tells whether the fence held.
    recording: bool = False
    started: float = 0.0  # monotonic, at claim
    handler_seconds: float = 0.0  # how long the attempt ran (for metrics and the log)
    outcome: Outcome | None = None  # once decided, for the writer's answer to report

    @property
    def lease(self) -> Lease:
        return Lease(self.claimed.run_id, self.claimed.fence)


class WorkerBase:
    """What every part of the worker reads and changes."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        settings: Settings,
        clock: Clock,
        options: WorkerOptions,
        *,
        restarts: Restarts | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self.settings = settings
        self.clock = clock
        self.options = options
        self.queues = options.queues or registry.queues()
        self._held: dict[int, Held] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._busy = 0
        self._slot_freed = asyncio.Event()
        self._threads = ThreadPoolExecutor(
            max_workers=options.concurrency, thread_name_prefix=f"rota-{options.node_id}"
        )
        # Failures of this worker's background tasks, by task name (for metrics); the
        # node hands in the counter it shares with its leader duties.
        self.restarts = restarts or Restarts()
        self._writer = OutcomeWriter(store, clock.db_now, self.restarts, self._outcomes_settled)
        # Asked once: the port that lends async handlers a transaction, if the store has one.
        self._handler_tx = handler_transactions(store)
        self._log = log.bind(node_id=options.node_id)
        # Claiming is allowed while set; cleared while the registry says "draining".
        self._may_claim = asyncio.Event()
        self._may_claim.set()
        self.claimed_total = 0
        self._live: LiveLogs | None = None  # made in run(): it belongs to the loop

    def _outcomes_settled(self, batch: Sequence[Any], written: set[int] | BaseException) -> None:
        """The outcome writer's answer for a batch (rota.engine.worker_runs)."""
        raise NotImplementedError
