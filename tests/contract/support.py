"""Helpers shared by the store contract suite.

Every instant here is an explicit, whole-second UTC datetime passed as ``now``: the
tests move the database clock by hand, and whole seconds survive SQLite's REAL column
exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from rota.domain.runs import ClaimedRun, Lease, NewRun, Outcome, Run
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest, Store

T = TypeVar("T")
T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
LEASE_SECONDS = 30.0
# A hard ceiling for anything concurrent, well under pytest's own timeout.
DEADLINE_SECONDS = 20.0


def at(seconds: float) -> datetime:
    """T0 plus ``seconds``: the instants the tests hand the store as ``now``."""
    return T0 + timedelta(seconds=seconds)


def new_run(handler: str = "job", payload: str = '{"n":1}', **fields: Any) -> NewRun:
    return NewRun(handler=handler, payload_json=payload, **fields)


async def enqueue_one(store: Store, now: datetime = T0, **fields: Any) -> int:
    [enqueued] = await store.enqueue([new_run(**fields)], now)
    assert enqueued.created
    return enqueued.run_id


async def state_of(store: Store, run_id: int) -> RunState:
    run: Run | None = await store.get_run(run_id)
    assert run is not None, f"run {run_id} is gone"
    return run.state


def claim_request(
    limit: int = 1,
    queues: Iterable[str] = ("default",),
    worker_id: str = "worker-1",
    lease_seconds: float = LEASE_SECONDS,
) -> ClaimRequest:
    return ClaimRequest(worker_id, tuple(queues), limit, lease_seconds)


async def claim(store: Store, now: datetime = T0, **request: Any) -> list[ClaimedRun]:
    return await store.claim(claim_request(**request), now)


async def claim_one(store: Store, now: datetime = T0, **request: Any) -> ClaimedRun:
    claimed = await claim(store, now, limit=1, **request)
    assert len(claimed) == 1, claimed
    return claimed[0]


def lease_of(claimed: ClaimedRun) -> Lease:
    return Lease(claimed.run_id, claimed.fence)


def is_step(claimed: ClaimedRun | Lease) -> bool:
    """As a worker says it (rota.engine.execution.outcome_of): every workflow step carries its
    step input, and its outcome must release the steps waiting on it."""
    return isinstance(claimed, ClaimedRun) and claimed.step_input is not None


def succeeded(claimed: ClaimedRun | Lease, result: str = '{"ok":true}') -> Outcome:
    return Outcome(
        claimed.run_id,
        claimed.fence,
        RunState.SUCCEEDED,
        AttemptOutcome.SUCCEEDED,
        result,
        workflow_step=is_step(claimed),
    )


def retrying(claimed: ClaimedRun, delay: float = 30.0, error: str = "boom") -> Outcome:
    return Outcome(
        claimed.run_id,
        claimed.fence,
        RunState.RETRYING,
        AttemptOutcome.FAILED,
        error=error,
        retry_delay=delay,
        workflow_step=is_step(claimed),
    )


def finished(claimed: ClaimedRun, state: RunState, outcome: AttemptOutcome) -> Outcome:
    return Outcome(
        claimed.run_id,
        claimed.fence,
        state,
        outcome,
        error=f"ended {state}",
        workflow_step=is_step(claimed),
    )


async def count_finished(store: Store, now: datetime) -> int:
    """The leader's count of finished runs (the charts' rollup, which the finished counts
    read too), caught up at ``now``; returns how many batches it took."""
    batches = 1
    while not (await store.count_chart_batch(now)).caught_up:
        batches += 1
        assert batches < 500, "the rollup never caught up"
    return batches


async def bounded(awaitable: Awaitable[T]) -> T:
    """Await with a hard deadline, so a concurrency bug fails the test instead of
    hanging it."""
    async with asyncio.timeout(DEADLINE_SECONDS):
        return await awaitable


@asynccontextmanager
async def peers(store: Store, count: int) -> AsyncIterator[list[Store]]:
    """``count`` more stores on the same database, each with its own connection(s) (and,
    for SQLite, its own thread), so claims really contend."""
    opened: list[Store] = []
    try:
        for _ in range(count):
            # The same kind of store on the same database: both take (url, aging_seconds).
            peer: Store = type(store)(store.url, aging_seconds=store.aging_seconds)  # type: ignore[call-arg]
            await peer.open()
            opened.append(peer)
        yield opened
    finally:
        await asyncio.gather(*(peer.close() for peer in opened))
