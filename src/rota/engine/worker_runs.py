"""A worker's runs: start one it claimed, run it, and record its outcome under the fence."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from rota.domain.runs import ClaimedRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.engine.execution import (
    execute,
    failure_outcome,
    infrastructure_outcome,
    run_context,
)
from rota.engine.live_logs import LiveAttempt
from rota.engine.worker_state import Held, WorkerBase
from rota.errors import StoreError, StoreUnavailable
from rota.observe import hooks, tracing


class WorkerRuns(WorkerBase):
    """One task per claimed run: execute it, then hand its outcome to the writer. The
    task ends there; the writer's answer for the whole batch settles its runs
    (:meth:`_outcomes_settled`)."""

    def _start(self, claimed: ClaimedRun) -> None:
        self.claimed_total += 1
        spec = self.registry.get(claimed.handler)
        open_tx = None
        if spec is not None and spec.is_async and self._handler_tx is not None:
            open_tx = self._handler_tx.begin_handler_transaction
        clock = self.clock
        ctx = run_context(claimed, self.options.node_id, clock.now, open_tx)
        if self._live is not None:
            self._live.watch(ctx.log)
        if claimed.slot_at is not None:  # slot to start, for schedules (no clock read else)
            hooks.run_starting(claimed, clock.now())
        held = Held(claimed, ctx, started=clock.monotonic())
        run_id = claimed.run_id
        self._held[run_id] = held
        self._busy += 1
        # Not rota.supervise.watched: _run_one logs what escapes it itself, so the task
        # needs no done callback (one more loop turn per run).
        self._tasks[run_id] = asyncio.get_running_loop().create_task(
            self._run_one(held), name=f"rota-run-{run_id}"
        )

    async def _run_one(self, held: Held) -> None:
        claimed, ctx = held.claimed, held.ctx
        slot_taken = True
        submitted = False  # the outcome is with the writer: its answer lets the run go
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
            submitted = await self._record(held, finished.outcome)
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
        except Exception as exc:  # noqa: BLE001 - a bug, or a store failure nobody caught
            # Logged when it happens; the lease expires and the run is reaped and retried.
            self._run_log(claimed).error("run ended with an error", exc_info=exc)
        finally:
            if slot_taken:
                self._free_slot()
            self._tasks.pop(claimed.run_id, None)
            if not submitted:
                self._let_go([held])

    def _outcomes_settled(self, batch: Sequence[Any], written: set[int] | BaseException) -> None:
        """The writer's answer for a batch of submitted outcomes (tokens: Held)."""
        held: Sequence[Held] = batch
        if isinstance(written, BaseException):
            if not isinstance(written, asyncio.CancelledError):
                self._log.error(
                    "outcomes not recorded; the runs' leases expire and they are retried",
                    run_ids=[h.claimed.run_id for h in held],
                    error=str(written),
                )
        else:
            self._finished(held, written)
        self._let_go(held)

    def _finished(self, held: Sequence[Held], written: set[int]) -> None:
        """Count, time and log attempts whose outcomes were written or refused."""
        hooks.runs_finished(
            [(h.claimed, h.outcome, h.handler_seconds) for h in held if h.outcome is not None],
            written,
            self.options.node_id,
        )
        for h in held:
            if h.claimed.run_id not in written and h.outcome is not None:
                self._run_log(h.claimed).warning(
                    "outcome rejected by the fence: another worker holds this run now",
                    state=h.outcome.state.value,
                )

    def _let_go(self, held: Sequence[Held]) -> None:
        """The runs are no longer this worker's: their outcome is settled (or will not
        be, by us)."""
        for h in held:
            self._held.pop(h.claimed.run_id, None)
        self._slot_freed.set()  # room to claim may have been waiting for these
        hooks.runs_let_go([h.claimed for h in held])

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

    async def _record(self, held: Held, outcome: Outcome) -> bool:
        """Record the attempt's outcome under its fence. True when it was submitted to
        the writer (its batch's answer settles the run); False when settled here."""
        tx = held.ctx._transaction
        held.recording = True  # from here no live batch takes this attempt's lines
        if held.lost or held.released:  # a released run's lines are stored at shutdown
            if tx is not None:
                await tx.rollback()
            self._run_log(held.claimed).warning(
                "attempt result discarded: the lease is no longer ours"
            )
            return False
        if self._live is not None and self._live.writing:
            # Its earlier lines may be in that batch: they land before its last ones.
            await self._live.settled()
        lines = held.ctx.log.take(final=True)
        held.outcome = outcome
        if tx is None:
            self._writer.submit(outcome, lines, held)
            return True
        if outcome.state is RunState.SUCCEEDED:
            written = await self._commit_with(held, tx, outcome)
            await self._writer.store_logs(held.lease, lines)
        else:
            await tx.rollback()
            written = await self._writer.record(outcome, lines)
        self._finished([held], {held.claimed.run_id} if written else set())
        return False

    async def _commit_with(self, held: Held, tx: Any, outcome: Outcome) -> bool:
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

    def _free_slot(self) -> None:
        self._busy -= 1
        self._slot_freed.set()
