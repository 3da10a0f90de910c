"""Drain an App in a test: claim every due run and run it to completion, in-process and
one at a time, on the App's real store, so a test sees exactly what a worker would
have written, without a worker, a thread of its own or a wait.

The same steps as a worker's (claim under a lease, the same
:func:`rota.engine.execution.run_context` and :func:`rota.engine.execution.execute`,
complete under the fence), minus what only matters between processes: no heartbeat
(nothing runs long enough to need one), no batching, no live log tail. Runs whose
retry falls due later are left waiting: move the App's :class:`~rota.FakeClock` and
drain again. Schedules are planned first (a planner tick at the App clock's now), so
moving the clock past a cron slot and draining runs that slot.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from rota.domain.runs import ClaimedRun, Lease
from rota.domain.states import RunState
from rota.engine.execution import execute, run_context
from rota.engine.planner import Planner
from rota.errors import DrainLimitReached
from rota.store.port import ClaimRequest

if TYPE_CHECKING:
    from rota.app import App

WORKER_ID = "rota-testing"
# Enough for any test's fan-out; a drain that keeps finding work past it is a loop
# (a handler enqueueing itself), and a test should hear about it rather than hang.
DEFAULT_MAX_RUNS = 1000


@dataclass(frozen=True)
class Drained:
    """One attempt a drain ran: which run, what it was given, and how it ended."""

    run_id: int
    handler: str
    payload: Any
    attempt: int
    state: RunState  # the run's state after this attempt (Retrying, Succeeded, ...)
    result: Any = None
    error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.state is RunState.SUCCEEDED


def drain(app: App, *, max_runs: int = DEFAULT_MAX_RUNS, plan: bool = True) -> list[Drained]:
    """Run every run that is due now, including those the runs themselves enqueue, and
    return each attempt in the order it ran. Blocking; callable from sync and async
    tests alike.

    It runs on an event loop of its own, in a thread of its own, with a store it
    closes at the end: not on the App's sync door, because a handler calling the App's
    sync methods (``app.enqueue`` in an async handler) would then wait on the very
    loop that runs it, for ever."""

    async def drain_and_close() -> list[Drained]:
        try:
            return await drain_async(app, max_runs=max_runs, plan=plan)
        finally:
            await app.aclose()  # this loop's store only

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{WORKER_ID}-loop") as loop:
        return loop.submit(asyncio.run, drain_and_close()).result()


async def drain_async(
    app: App, *, max_runs: int = DEFAULT_MAX_RUNS, plan: bool = True
) -> list[Drained]:
    """:func:`drain` on the running event loop (the App's store for this loop)."""
    store = await app.store()
    drained: list[Drained] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=WORKER_ID) as threads:
        while True:
            if plan:
                await Planner(store, timedelta(0)).tick(app.clock.now())
            request = ClaimRequest(
                worker_id=WORKER_ID,
                queues=_queues(app),
                limit=1,  # one at a time: the order a test sees is the order runs ran
                lease_seconds=app.settings.lease_seconds,
            )
            claimed = await store.claim(request, app.clock.db_now())
            if not claimed:
                return drained
            [run] = claimed
            if len(drained) >= max_runs:
                await store.release([Lease(run.run_id, run.fence)], app.clock.db_now())
                raise DrainLimitReached(max_runs)
            drained.append(await _run_one(app, run, threads))


async def _run_one(app: App, claimed: ClaimedRun, threads: ThreadPoolExecutor) -> Drained:
    store = await app.store()
    ctx = run_context(claimed, WORKER_ID, app.clock.now)
    finished = await execute(app.registry.get(claimed.handler), claimed, ctx, threads)
    outcome = finished.outcome
    await store.complete([outcome], app.clock.db_now())
    lines = ctx.log.take(final=True)
    if lines:
        await store.append_logs(lines, {claimed.run_id: claimed.fence})
    result = None if outcome.result_json is None else json.loads(outcome.result_json)
    return Drained(
        claimed.run_id,
        claimed.handler,
        claimed.payload,
        claimed.attempt,
        outcome.state,
        result,
        outcome.error,
    )


def _queues(app: App) -> tuple[str, ...]:
    # Every queue the App's handlers use; a run of an unknown handler on one of them is
    # run too, and fails as it would on a worker ("not registered on this worker").
    return app.registry.queues()
