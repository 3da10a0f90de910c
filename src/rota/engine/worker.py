"""The worker: claim -> run -> heartbeat -> complete, every write under the run's fence.

One asyncio task claims batches sized to the free slots; one task per run executes it
(async handlers on the loop, plain functions in a thread pool); one heartbeat task
renews every held lease in a single statement; an OutcomeWriter records outcomes in
batches. The leader's duties (planning, reaping, pruning) are not the worker's: a node
runs them beside it (rota.engine.node).

This module starts the worker, keeps its entry in the worker registry and shuts it
down. Its parts: the claim loop (worker_claims), a run from start to recorded outcome
(worker_runs), lease renewal (worker_leases), the state they share (worker_state) and
the options it is given (worker_options).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from typing import Any

from rota._version import __version__
from rota.domain.limits import Limit, LimitScope
from rota.domain.rates import RateLimit, RateScope
from rota.domain.workers import WorkerInfo, WorkerState
from rota.engine.live_logs import LiveLogs
from rota.engine.worker_claims import ClaimLoop
from rota.engine.worker_leases import Leases
from rota.engine.worker_options import DEFAULT_CONCURRENCY as DEFAULT_CONCURRENCY
from rota.engine.worker_options import WorkerOptions as WorkerOptions
from rota.engine.worker_options import default_node_id as default_node_id
from rota.errors import StoreError
from rota.supervise import (
    CANCEL_WAIT_SECONDS,
    cancel_and_wait,
    every,
    supervise,
    until_reachable,
    watched,
)


class Worker(ClaimLoop, Leases):
    """A worker on ``store``: its state is set up in rota.engine.worker_state."""

    async def run(self, stop: asyncio.Event) -> None:
        self._log.info(
            "worker started", queues=list(self.queues), concurrency=self.options.concurrency
        )
        if (
            self.store.supports_handler_transactions
            and self.options.concurrency > self.settings.handler_pool_size
        ):
            # Debug: the defaults (100 runs, 8 handler transactions) meet this on every
            # PostgreSQL start, and most handlers never open a transaction (ADR 0019).
            self._log.debug(
                "more runs at once than handler transactions: handlers past the limit "
                "wait for a ctx.transaction() connection",
                concurrency=self.options.concurrency,
                handler_pool_size=self.settings.handler_pool_size,
            )
        self._writer.start()
        live = self._live = LiveLogs(self.store, self._live_attempts)
        await until_reachable(
            "start-up", self._start_up, self.restarts, within=self.settings.start_up_retry_seconds
        )
        background = self._background(live)
        stopping = watched(stop.wait(), name="rota-stop")
        try:
            await supervise("claims", lambda: self._claim_loop(stopping), self.restarts)
        finally:
            await cancel_and_wait(stopping, CANCEL_WAIT_SECONDS)
            await self._shut_down()
            for task in background:
                await cancel_and_wait(task, CANCEL_WAIT_SECONDS)
            self._threads.shutdown(wait=False, cancel_futures=True)
            with contextlib.suppress(StoreError):
                await self.store.deregister_worker(self.options.node_id)
            self._log.info("worker stopped", claimed=self.claimed_total)

    def _background(self, live: LiveLogs) -> list[asyncio.Task[Any]]:
        """The worker's own loops beside the claims: lease renewal, the registry
        heartbeat and the live log tail."""
        return [
            watched(
                every("leases", self.settings.heartbeat_seconds, self.heartbeat, self.restarts),
                name="rota-leases",
            ),
            watched(
                every(
                    "registry",
                    self.settings.worker_heartbeat_seconds,
                    self.registry_heartbeat,
                    self.restarts,
                ),
                name="rota-registry",
            ),
            watched(supervise("live-logs", live.run, self.restarts), "rota-live-logs"),
        ]

    # -- the registry ---------------------------------------------------------
    async def _start_up(self) -> None:
        """What the worker writes before it claims: both are upserts, so a start-up
        cut short by a dropped connection is simply run again."""
        await self._publish_handler_limits()
        await self._register()

    async def _publish_handler_limits(self) -> None:
        """Handler caps, rates and breakers are declared in code; every worker writes
        them to the store, where every claimer reads them (a cap is only as good as its
        cluster-wide view)."""
        for spec in self.registry.specs():
            if spec.concurrency_limit is not None:
                limit = Limit(LimitScope.HANDLER, spec.name, spec.concurrency_limit)
                await self.store.set_limit(limit)
            if spec.rate_limit is not None:
                await self.store.set_rate(RateLimit(RateScope.HANDLER, spec.name, spec.rate_limit))
            if spec.breaker is not None:
                await self.store.set_breaker_rule(spec.name, spec.breaker)
        # No retry: a worker that cannot write its handlers' caps must not start claiming
        # their runs as if they had none; the error stops the worker with its message.

    async def _register(self) -> None:
        info = WorkerInfo(
            node_id=self.options.node_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            version=__version__,
            queues=self.queues,
            tags=self.options.tags,
            concurrency=self.options.concurrency,
        )
        try:
            await self.store.register_worker(info, self.clock.db_now())
        except StoreError as exc:
            self._log.warning("could not register; will retry", error=str(exc))

    async def registry_heartbeat(self) -> None:
        """Tell the registry we are alive, and learn whether to drain."""
        try:
            state = await self.store.worker_heartbeat(self.options.node_id, self.clock.db_now())
        except StoreError as exc:
            self._log.warning("registry heartbeat failed; will retry", error=str(exc))
            return
        if state is None:  # pruned while we were away: register again
            await self._register()
        elif state is WorkerState.DRAINING and self._may_claim.is_set():
            self._log.info("draining: finishing held runs, claiming no more")
            self._may_claim.clear()
        elif state is WorkerState.ACTIVE and not self._may_claim.is_set():
            self._log.info("active again: claiming")
            self._may_claim.set()

    # -- shutdown -----------------------------------------------------------
    async def _shut_down(self) -> None:
        """Stop claiming (already done), let running work finish within the grace
        period, then hand back what is left so another worker takes it at once."""
        pending = [t for t in self._tasks.values() if not t.done()]
        if pending:
            self._log.info("waiting for running runs", count=len(pending))
            await asyncio.wait(pending, timeout=self.settings.shutdown_grace_seconds)
        # Every run still held: running, or its outcome still with the writer (if the
        # writer cannot write it before closing, the run is handed back, not left to
        # its lease; one it did write is no longer active, and release passes it by).
        leftovers = list(self._held.values())
        for h in leftovers:
            h.released = True
            h.ctx.cancelled.set()
        running = list(self._tasks.values())
        for task in running:
            task.cancel()
        if running:
            _, stuck = await asyncio.wait(running, timeout=self.settings.cancel_grace_seconds)
            if stuck:  # a handler swallowed its cancellation: do not wait on it forever
                self._log.error("runs did not stop when cancelled", count=len(stuck))
        await self._writer.close()
        if leftovers:
            if self._live is not None:
                await self._live.settled()
            lines = [line for h in leftovers for line in h.ctx.log.take(final=True)]
            fences = {h.claimed.run_id: h.claimed.fence for h in leftovers}
            with contextlib.suppress(StoreError):  # lines, not outcomes: not retried
                await self.store.append_logs(lines, fences)
            try:
                released = await self.store.release(
                    [h.lease for h in leftovers], self.clock.db_now()
                )
                self._log.info("released unfinished runs", run_ids=sorted(released))
            except StoreError as exc:
                self._log.warning(
                    "could not release runs; their leases will expire", error=str(exc)
                )
