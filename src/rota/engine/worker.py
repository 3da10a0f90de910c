"""The worker: claim -> run -> heartbeat -> complete, every write under the run's fence.

One asyncio task claims batches sized to the free slots; one task per run executes it
(async handlers on the loop, plain functions in a thread pool); one heartbeat task
renews every held lease in a single statement; an OutcomeWriter records outcomes in
batches. The leader's duties (planning, reaping, pruning) are not the worker's: a node
runs them beside it (rota.engine.node).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import structlog

from rota._version import __version__
from rota.bootstrap import handler_transactions
from rota.clock import Clock
from rota.config import Settings
from rota.context import RunContext, RunLogger
from rota.domain.limits import Limit, LimitScope
from rota.domain.rates import RateLimit, RateScope
from rota.domain.runs import (
    ClaimedRun,
    Lease,
    Outcome,
    check_name,
    check_positive_int,
)
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.workers import WorkerInfo, WorkerState
from rota.engine.execution import execute, failure_outcome, infrastructure_outcome
from rota.engine.live_logs import LiveAttempt, LiveLogs
from rota.engine.outcomes import OutcomeWriter
from rota.errors import InvalidArgument, StoreError, StoreUnavailable
from rota.handlers import Registry
from rota.observe import hooks, tracing
from rota.store.port import ClaimRequest, Store
from rota.supervise import (
    CANCEL_WAIT_SECONDS,
    Restarts,
    cancel_and_wait,
    every,
    supervise,
    watched,
)

log = structlog.get_logger("rota.engine.worker")
MAX_CLAIM_BATCH = 100
# Runs at once per worker when nothing says otherwise (ADR 0019): handlers are async and
# mostly wait on I/O, so a worker is bound by its event loop's CPU, not by slots. At 100
# a claim fills a whole batch (MAX_CLAIM_BATCH) as slots free up, and the no-op drain is
# within a few percent of the best any setting reached (docs/benchmarks.md). Sync
# handlers run in threads; only as many are started as run at once.
DEFAULT_CONCURRENCY = 100
# SQLite's clock ('now') reads whole milliseconds: a claim sent just as a run falls due
# may not see it due yet. An idle worker's look-back (next_due_in's looked_ago) covers
# that much more, so such a run is claimed again at once, not a poll later (issue 25).
CLOCK_SLACK_SECONDS = 0.005


def default_node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class WorkerOptions:
    node_id: str = field(default_factory=default_node_id)
    concurrency: int = DEFAULT_CONCURRENCY
    queues: tuple[str, ...] = ()  # empty: the queues of the registered handlers
    tags: tuple[str, ...] = ()  # capabilities: runs needing a subset of these may be claimed
    # Whether the node this worker runs in stands for leader (rota.engine.node); the leader
    # plans schedules, reaps expired leases and prunes.
    leader: bool = True

    def __post_init__(self) -> None:
        check_name("node_id", self.node_id)
        check_positive_int("concurrency", self.concurrency)
        if isinstance(self.queues, str):
            raise InvalidArgument("queues", self.queues, "a list of queue names")
        for queue in self.queues:
            check_name("queue", queue)
        if isinstance(self.tags, str):
            raise InvalidArgument("tags", self.tags, "a list of tag names")
        for tag in self.tags:
            check_name("tag", tag)


@dataclass
class _Held:
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

    @property
    def lease(self) -> Lease:
        return Lease(self.claimed.run_id, self.claimed.fence)


class Worker:
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
        self._held: dict[int, _Held] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._busy = 0
        self._slot_freed = asyncio.Event()
        self._threads = ThreadPoolExecutor(
            max_workers=options.concurrency, thread_name_prefix=f"rota-{options.node_id}"
        )
        # Failures of this worker's background tasks, by task name (for metrics); the
        # node hands in the counter it shares with its leader duties.
        self.restarts = restarts or Restarts()
        self._writer = OutcomeWriter(store, clock.db_now, self.restarts)
        # Asked once: the port that lends async handlers a transaction, if the store has one.
        self._handler_tx = handler_transactions(store)
        self._log = log.bind(node_id=options.node_id)
        # Claiming is allowed while set; cleared while the registry says "draining".
        self._may_claim = asyncio.Event()
        self._may_claim.set()
        self.claimed_total = 0
        self._live: LiveLogs | None = None  # made in run(): it belongs to the loop

    # -- the loop -----------------------------------------------------------
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
        await self._publish_handler_limits()
        await self._register()
        background = [
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

    async def _claim_loop(self, stopping: asyncio.Task[Any]) -> None:
        backoff = 0.05
        while not stopping.done():
            if not self._may_claim.is_set():  # draining: finish what we hold, take nothing
                await self._first(stopping, self._may_claim.wait())
                continue
            free = self._room()
            if free <= 0:
                await self._first(stopping, self._wait_slot())
                continue
            claim_started = self.clock.monotonic()
            try:
                claimed = await self.store.claim(
                    ClaimRequest(
                        worker_id=self.options.node_id,
                        queues=self.queues,
                        limit=min(free, MAX_CLAIM_BATCH),
                        lease_seconds=self.settings.lease_seconds,
                        tags=self.options.tags,
                    ),
                    self.clock.db_now(),
                )
                backoff = 0.05
            except StoreError as exc:
                self._log.warning("claim failed; retrying", error=str(exc), backoff=backoff)
                await self._first(stopping, asyncio.sleep(backoff))
                backoff = min(backoff * 2, 5.0)
                continue
            hooks.runs_claimed(claimed)
            for run in claimed:
                self._start(run)
            # A claim that found runs is followed by another at once: more may be due (a
            # burst, or keyed runs the claim left, see Store.claim). Only an empty claim
            # means nothing is due, and only then does the worker wait.
            if not claimed:
                looked_ago = self.clock.monotonic() - claim_started + CLOCK_SLACK_SECONDS
                wait = await self._idle_wait(looked_ago)
                await self._first(stopping, self.store.wait_for_work(wait))
            elif len(claimed) < min(free, MAX_CLAIM_BATCH):
                # A short claim (an idle worker's pickup): let its handlers start before
                # the next claim is prepared. A full one (a drain) sends the next claim
                # first, so the database works on it while the handlers run.
                await asyncio.sleep(0)

    async def _idle_wait(self, looked_ago: float) -> float:
        """How long to wait for work: the poll interval, or less when a waiting run falls
        due sooner (runs planned ahead of their slot were notified when inserted, before
        they could be claimed). A run that fell due since the empty claim looked
        (``looked_ago`` seconds) counts as due now: it was in neither answer, and would
        otherwise wait a whole poll (issue 25)."""
        poll = self.settings.poll_seconds
        try:
            due_in = await self.store.next_due_in(
                self.queues, self.clock.db_now(), looked_ago=looked_ago
            )
        except StoreError:
            return poll
        return poll if due_in is None else min(poll, due_in)

    def _room(self) -> int:
        """How many runs to claim now: the free slots, but never more runs held (running
        or with an outcome still being written) than twice the concurrency. Without that
        cap a slow database lets held runs pile up, their renewals grow, and leases
        expire under load."""
        concurrency = self.options.concurrency
        return min(concurrency - self._busy, 2 * concurrency - len(self._held))

    @staticmethod
    async def _first(stopping: asyncio.Task[Any], awaitable: Any) -> None:
        """Wait for ``awaitable`` or for the stop signal, whichever comes first; an
        error of ``awaitable`` is raised here."""
        waiter = asyncio.ensure_future(awaitable)
        try:
            await asyncio.wait({waiter, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not waiter.done():
                await cancel_and_wait(waiter, CANCEL_WAIT_SECONDS)
        if waiter.done() and not waiter.cancelled():
            waiter.result()

    async def _wait_slot(self) -> None:
        await self._slot_freed.wait()
        self._slot_freed.clear()

    # -- one run ------------------------------------------------------------
    def _start(self, claimed: ClaimedRun) -> None:
        self.claimed_total += 1
        spec = self.registry.get(claimed.handler)
        open_tx = None
        if spec is not None and spec.is_async and self._handler_tx is not None:
            open_tx = self._handler_tx.begin_handler_transaction
        ctx = RunContext(
            run_id=claimed.run_id,
            handler=claimed.handler,
            queue=claimed.queue,
            attempt=claimed.attempt,
            max_attempts=claimed.max_attempts,
            fence=claimed.fence,
            idempotency_key=claimed.idempotency_key or f"rota-run-{claimed.run_id}",
            worker_id=self.options.node_id,
            log=RunLogger(claimed, self.clock.now),
            _open_transaction=open_tx,
            _step_input=claimed.step_input,
        )
        if self._live is not None:
            self._live.watch(ctx.log)
        hooks.run_starting(claimed, self.clock.now())  # slot to start, for schedules
        held = _Held(claimed, ctx, started=self.clock.monotonic())
        self._held[claimed.run_id] = held
        self._busy += 1
        # watched: an error escaping the run (a bug, or a store failure nobody caught)
        # is logged when it happens, not as "Task exception was never retrieved".
        self._tasks[claimed.run_id] = watched(self._run_one(held), f"rota-run-{claimed.run_id}")

    async def _run_one(self, held: _Held) -> None:
        claimed, ctx = held.claimed, held.ctx
        slot_taken = True
        try:
            finished = await tracing.processing(
                execute(self.registry.get(claimed.handler), claimed, ctx, self._threads),
                claimed,
                self.options.node_id,
                outcome_of=lambda done: done.outcome.state.value,
            )
            held.handler_seconds = self.clock.monotonic() - held.started
            if finished.straggler is None:
                # Free the slot before the write: the next claim need not wait for it.
                self._free_slot()
                slot_taken = False
            await self._record(held, finished.outcome)
            self._held.pop(claimed.run_id, None)
            self._slot_freed.set()  # room to claim may have been waiting for this write
            if finished.straggler is not None:
                # The outcome stands; the thread keeps its slot until it really returns,
                # so the worker never runs more threads than its concurrency.
                self._run_log(claimed).warning(
                    "handler thread still running after its attempt ended"
                )
                await asyncio.wait({finished.straggler})
        except asyncio.CancelledError:
            # Shutdown past the grace period: no outcome of ours; the run is released.
            if ctx._transaction is not None:
                await ctx._transaction.rollback()
            raise
        finally:
            if slot_taken:
                self._free_slot()
            self._held.pop(claimed.run_id, None)
            self._tasks.pop(claimed.run_id, None)
            hooks.run_let_go(claimed)

    def _run_log(self, claimed: ClaimedRun) -> Any:
        # Bound only when there is something to say: binding per run costs the hot path.
        return self._log.bind(run_id=claimed.run_id, fence=claimed.fence)

    def _live_attempts(self) -> list[LiveAttempt]:
        """Held attempts with lines waiting whose outcome is not yet being written."""
        return [
            LiveAttempt(h.claimed.run_id, h.claimed.fence, h.ctx.log)
            for h in self._held.values()
            if h.ctx.log.waiting and not (h.recording or h.lost or h.released)
        ]

    async def _record(self, held: _Held, outcome: Any) -> None:
        tx = held.ctx._transaction
        held.recording = True  # from here no live batch takes this attempt's lines
        if held.lost or held.released:  # a released run's lines are stored at shutdown
            if tx is not None:
                await tx.rollback()
            self._run_log(held.claimed).warning(
                "attempt result discarded: the lease is no longer ours"
            )
            return
        if self._live is not None and self._live.writing:
            # Its earlier lines may be in that batch: they land before its last ones.
            await self._live.settled()
        lines = held.ctx.log.take(final=True)
        if tx is not None:
            if outcome.state is RunState.SUCCEEDED:
                written = await self._commit_with(held, tx, outcome)
                await self._writer.store_logs(held.lease, lines)
            else:
                await tx.rollback()
                written = await self._writer.record(outcome, lines)
        else:
            written = await self._writer.record(outcome, lines)
        hooks.run_finished(
            held.claimed, outcome, written, held.handler_seconds, self.options.node_id
        )
        if not written:
            self._run_log(held.claimed).warning(
                "outcome rejected by the fence: another worker holds this run now",
                state=outcome.state.value,
            )

    async def _commit_with(self, held: _Held, tx: Any, outcome: Outcome) -> bool:
        """Commit the handler's transaction together with its outcome. When the link
        breaks during the commit, whether it landed is unknown: ask the database as
        soon as it answers, and settle the run at once (recorded, or retried with its
        attempt given back) instead of leaving it to wait out its lease."""
        claimed = held.claimed
        try:
            return bool(await tx.commit_with(outcome, self.clock.db_now()))
        except StoreUnavailable as exc:
            self._run_log(claimed).warning("commit interrupted; checking whether it landed")
            fallback = infrastructure_outcome(claimed, exc)
        except StoreError as exc:  # refused at commit (e.g. the handler's own constraint)
            spec = self.registry.get(claimed.handler)
            fallback = failure_outcome(spec, claimed, AttemptOutcome.FAILED, str(exc))
            return await self._writer.record(fallback, [])
        return await self._writer.settle(outcome, fallback)

    def _cancel(self, held: _Held, at_once: bool = False) -> None:
        """Ask the handler to stop (ctx.cancelled); if it has not returned after the
        grace period (``at_once``: now), cancel its task, which ends the attempt
        Cancelled."""
        held.ctx.cancelled.set()
        task = self._tasks.get(held.claimed.run_id)

        def force() -> None:
            if task is not None and not task.done() and not held.recording:
                task.cancel()

        if at_once:
            force()
        else:
            asyncio.get_running_loop().call_later(self.settings.cancel_grace_seconds, force)

    def _free_slot(self) -> None:
        self._busy -= 1
        self._slot_freed.set()

    # -- leases -------------------------------------------------------------
    async def heartbeat(self) -> None:
        """Renew every held lease at once; act on lost leases and cancel requests."""
        held = [h for h in self._held.values() if not h.released]
        if not held:
            return
        try:
            result = await self.store.renew(
                self.options.node_id,
                [h.lease for h in held],
                self.settings.lease_seconds,
                self.clock.db_now(),
            )
        except StoreError as exc:
            self._log.warning("lease renewal failed; will retry", error=str(exc))
            return
        for h in held:
            run_id = h.claimed.run_id
            if run_id in result.lost and run_id in self._held and not h.recording:
                h.lost = True
                hooks.lease_lost()
                self._log.warning("lease lost; stopping the run", run_id=run_id)
                self._cancel(h)
            elif run_id in result.cancel_requested and not h.ctx.is_cancelled():
                self._log.info("cancel requested", run_id=run_id)
                # An async handler stops at its next await; a plain def cannot be
                # interrupted in its thread, so it gets the grace to see is_cancelled().
                spec = self.registry.get(h.claimed.handler)
                self._cancel(h, at_once=spec is not None and spec.is_async)

    # -- the registry ---------------------------------------------------------
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
        leftovers = [h for h in self._held.values() if h.claimed.run_id in self._tasks]
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
