"""The cluster as an operator sees it: registered workers (judged by the database's
clock), draining and resuming one, and who leads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.clock import Clock
from rota.domain.workers import WorkerInfo, WorkerState
from rota.errors import WorkerNotFound
from rota.store.port import LeaderInfo, Store


@dataclass(frozen=True)
class WorkerSeen:
    """A registered worker, with the database's clock reading to judge its last
    heartbeat by (a worker's age is never measured on the reader's clock)."""

    worker: WorkerInfo
    now: datetime


async def list_workers(store: Store) -> list[WorkerInfo]:
    return await store.list_workers()


async def workers_seen(store: Store, clock: Clock) -> list[WorkerSeen]:
    """Every registered worker with its state, as of the database's now."""
    now = await store.now(clock.db_now())
    return [WorkerSeen(worker, now) for worker in await store.list_workers()]


async def worker_seen(store: Store, clock: Clock, node_id: str) -> WorkerSeen:
    for seen in await workers_seen(store, clock):
        if seen.worker.node_id == node_id:
            return seen
    raise WorkerNotFound(node_id)


async def drain_worker(store: Store, clock: Clock, node_id: str) -> WorkerSeen:
    """The worker stops claiming and finishes what it holds (it notices within one
    registry heartbeat). Returns the worker as it is now."""
    if not await store.set_worker_state(node_id, WorkerState.DRAINING):
        raise WorkerNotFound(node_id)
    return await worker_seen(store, clock, node_id)


async def resume_worker(store: Store, clock: Clock, node_id: str) -> WorkerSeen:
    """A drained worker claims again. Returns the worker as it is now."""
    if not await store.set_worker_state(node_id, WorkerState.ACTIVE):
        raise WorkerNotFound(node_id)
    return await worker_seen(store, clock, node_id)


async def leader(store: Store) -> LeaderInfo | None:
    """Who leads the cluster now (holder, term, since when, until when), if anyone."""
    return await store.leader()
