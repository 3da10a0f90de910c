"""The one SQL store: claim-time limits, start-by deadlines and the worker registry."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from rota.domain.limits import Limit
from rota.domain.rates import RateLimit
from rota.domain.settle import deadline_error
from rota.domain.workers import UnclaimableRun, WorkerInfo, WorkerState
from rota.store.core.claim import CoreClaim
from rota.store.dialect import Session
from rota.store.rows import worker_from_row


class CoreRegistry(CoreClaim):
    async def set_limit(self, limit: Limit) -> None:
        params = {"scope": limit.scope.value, "name": limit.name, "max_running": limit.max_running}
        await self._d.write("set_limit", params)
        self._forget_limits()

    async def clear_limit(self, scope: str, name: str) -> bool:
        self._forget_limits()
        return bool(await self._d.write("clear_limit", {"scope": scope, "name": name}))

    async def list_limits(self) -> list[Limit]:
        rows = await self._d.rows("limits")
        return [Limit.parse(r["scope"], r["name"], r["max_running"]) for r in rows]

    async def set_rate(self, limit: RateLimit) -> None:
        rate = limit.rate
        params = {
            "scope": limit.scope.value,
            "name": limit.name,
            "count": rate.count,
            "period_seconds": rate.period_seconds,
        }
        await self._d.write("set_rate", params)
        self._forget_limits()

    async def clear_rate(self, scope: str, name: str) -> bool:
        self._forget_limits()
        return bool(await self._d.write("clear_rate", {"scope": scope, "name": name}))

    async def expire_deadlines(
        self, now: datetime | None, leader_term: int | None = None
    ) -> list[int]:
        async def expire(session: Session) -> list[int]:
            if not await self._term_holds(session, leader_term):
                return []
            passed = await session.rows("deadlines_passed")
            if not passed:
                return []
            items = [{"id": r["id"], "error": deadline_error(r["deadline"])} for r in passed]
            return [row["id"] for row in await session.batch("expire_deadlines", items)]

        return await self._d.in_transaction(now, expire)

    async def register_worker(self, worker: WorkerInfo, now: datetime | None) -> None:
        params = {
            "node_id": worker.node_id,
            "host": worker.host,
            "pid": worker.pid,
            "version": worker.version,
            "queues": list(worker.queues),
            "tags": sorted(worker.tags),
            "concurrency": worker.concurrency,
        }
        await self._d.write("register_worker", params, now)

    async def worker_heartbeat(self, node_id: str, now: datetime | None) -> WorkerState | None:
        rows = await self._d.write("worker_heartbeat", {"node_id": node_id}, now)
        return WorkerState(rows[0]["state"]) if rows else None

    async def set_worker_state(self, node_id: str, state: WorkerState) -> bool:
        params = {"node_id": node_id, "state": state.value}
        return bool(await self._d.write("set_worker_state", params))

    async def deregister_worker(self, node_id: str) -> None:
        await self._d.write("deregister_worker", {"node_id": node_id})

    async def list_workers(self) -> list[WorkerInfo]:
        return [worker_from_row(row) for row in await self._d.rows("list_workers")]

    async def mark_dead_workers(
        self, dead_after: float, now: datetime | None, leader_term: int | None = None
    ) -> list[str]:
        async def mark(session: Session) -> list[str]:
            if not await self._term_holds(session, leader_term):
                return []
            rows = await session.rows("mark_dead_workers", {"dead_after": dead_after})
            return [row["node_id"] for row in rows]

        return await self._d.in_transaction(now, mark)

    async def prune_workers(self, older_than: datetime) -> int:
        return len(await self._d.write("prune_workers", {"older_than": older_than}))

    async def unclaimable_runs(self, now: datetime | None, limit: int) -> list[UnclaimableRun]:
        rows = await self._d.rows("unclaimable_runs", {"limit": limit}, now)
        return [UnclaimableRun(row["id"], row["queue"], tuple(row["tags"])) for row in rows]

    async def next_due_in(
        self, queues: Sequence[str], now: datetime | None, looked_ago: float = 0.0
    ) -> float | None:
        # Both stores answer: an idle worker sleeps to the earliest due run (a poll or a
        # notification may wake it sooner), so a planned run starts at its slot.
        paused = await self._paused.get()
        if paused:  # a paused queue's due runs must not wake its workers over and over
            queues = [q for q in queues if q not in paused]
            if not queues:
                return None
        params = {"queues": list(queues), "looked_ago": max(looked_ago, 0.0)}
        rows = await self._d.rows("next_due_in", params, now)
        seconds = rows[0]["seconds"] if rows else None
        due = None if seconds is None else max(float(seconds), 0.0)  # fell due: now
        keyed = rows[0]["keyed_seconds"] if rows else None
        self._keyed_due_at = None if keyed is None else time.monotonic() + float(keyed)
        # A run held back by a rate is due, not waiting: wake when its bucket frees.
        frees_at = self._rate_frees_at
        if frees_at is not None:
            frees_in = max(frees_at - time.monotonic(), 0.0)
            due = frees_in if due is None else min(due, frees_in)
        return due
