"""PostgreSQL: claim-time limits, start-by deadlines, the worker registry, VACUUM."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import psycopg
import structlog

from rota.domain.limits import Active, Candidate, Limit, Limits, choose
from rota.domain.runs import ClaimedRun
from rota.domain.workers import UnclaimableRun, WorkerInfo, WorkerState
from rota.store.port import ClaimRequest
from rota.store.postgres.base import LIMITED_ROUNDS, PgBase, Q, _worker

log = structlog.get_logger("rota.store.postgres")


class PgRegistry(PgBase):
    # -- claim-time controls and the worker registry -------------------------
    async def set_limit(self, limit: Limit) -> None:
        params = {"scope": limit.scope.value, "name": limit.name, "max_running": limit.max_running}
        await self._tuples("set_limit", params)
        self._limits_cache = None

    async def clear_limit(self, scope: str, name: str) -> bool:
        self._limits_cache = None
        return bool(await self._tuples("clear_limit", {"scope": scope, "name": name}))

    async def list_limits(self) -> list[Limit]:
        return [Limit.parse(*row) for row in await self._tuples("limits", {})]

    async def expire_deadlines(
        self, now: datetime | None, leader_term: int | None = None
    ) -> list[int]:
        rows = await self._tuples("expire_deadlines", {"now": now, "term": leader_term})
        return [row[0] for row in rows]

    async def register_worker(self, worker: WorkerInfo, now: datetime | None) -> None:
        await self._tuples(
            "register_worker",
            {
                "node_id": worker.node_id,
                "host": worker.host,
                "pid": worker.pid,
                "version": worker.version,
                "queues": list(worker.queues),
                "tags": sorted(worker.tags),
                "concurrency": worker.concurrency,
                "now": now,
            },
        )

    async def worker_heartbeat(self, node_id: str, now: datetime | None) -> WorkerState | None:
        rows = await self._tuples("worker_heartbeat", {"node_id": node_id, "now": now})
        return WorkerState(rows[0][0]) if rows else None

    async def set_worker_state(self, node_id: str, state: WorkerState) -> bool:
        params = {"node_id": node_id, "state": state.value}
        return bool(await self._tuples("set_worker_state", params))

    async def deregister_worker(self, node_id: str) -> None:
        await self._tuples("deregister_worker", {"node_id": node_id})

    async def list_workers(self) -> list[WorkerInfo]:
        return [_worker(row) for row in await self._tuples("list_workers", {})]

    async def mark_dead_workers(
        self, dead_after: float, now: datetime | None, leader_term: int | None = None
    ) -> list[str]:
        rows = await self._tuples(
            "mark_dead_workers", {"dead_after": dead_after, "now": now, "term": leader_term}
        )
        return [row[0] for row in rows]

    async def prune_workers(self, older_than: datetime) -> int:
        async with self._conn() as conn:
            cur = await conn.execute(Q["prune_workers"], {"older_than": older_than})
            return cur.rowcount

    async def unclaimable_runs(self, now: datetime | None, limit: int) -> list[UnclaimableRun]:
        rows = await self._tuples("unclaimable_runs", {"now": now, "limit": limit})
        return [UnclaimableRun(row[0], row[1], tuple(row[2])) for row in rows]

    async def vacuum(self) -> None:
        # Autovacuum may be off or too slow for a queue's churn (ANCHORS: claim throughput
        # fell 70% in 40 s without it). VACUUM needs autocommit, which pool connections
        # have; it does not block readers or writers.
        # The hot path's statement timeout (a minute) is not meant for VACUUM, which
        # may take longer on a big table; RESET returns to the session's own limits.
        async with self._conn() as conn:
            await conn.execute("SET statement_timeout = 0")
            try:
                await conn.execute("VACUUM (ANALYZE) rota_runs")
                await conn.execute("VACUUM rota_attempts, rota_run_logs, rota_jobs, rota_workers")
            except BaseException:
                # Interrupted (cancelled, cut off): a session without its statement limit
                # must not go back to the pool; a closed connection is discarded.
                await conn.close()
                raise
            await conn.execute("RESET statement_timeout")

    # -- the limited claim path (see ADR 0008) -----------------------------
    async def _limits(self, conn: psycopg.AsyncConnection[Any]) -> Limits:
        """Limits change rarely; read them at most once a second per store."""
        if self._limits_cache is None or time.monotonic() - self._limits_cache[0] > 1.0:
            cur = await conn.execute(Q["limits"])
            limits = Limits.of([Limit.parse(*row) for row in await cur.fetchall()])
            self._limits_cache = (time.monotonic(), limits)
        return self._limits_cache[1]

    async def _has_keyed_work(
        self, conn: psycopg.AsyncConnection[Any], queues: list[str], now: datetime | None
    ) -> bool:
        cur = await conn.execute(Q["has_keyed_work"], {"queues": queues, "now": now})
        row = await cur.fetchone()
        return bool(row and row[0])

    async def _claim_limited(
        self,
        conn: psycopg.AsyncConnection[Any],
        request: ClaimRequest,
        queues: list[str],
        tags: list[str],
        limits: Limits,
        want: int,
        now: datetime | None,
    ) -> list[ClaimedRun]:
        """Claim runs some limit applies to, one claimer at a time cluster-wide."""
        try:
            async with conn.transaction():
                await conn.execute(Q["claim_lock"])
                chosen = await self._choose_limited(conn, queues, tags, limits, want, now)
                if not chosen:
                    return []
                cur = await conn.execute(
                    Q["claim_ids"],
                    {
                        "ids": chosen,
                        "worker_id": request.worker_id,
                        "lease_seconds": request.lease_seconds,
                        "now": now,
                    },
                )
                return [ClaimedRun(*row) for row in await cur.fetchall()]
        except psycopg.errors.LockNotAvailable:
            log.info("limited claim skipped: another claimer holds the limits lock")
            return []

    async def _choose_limited(
        self,
        conn: psycopg.AsyncConnection[Any],
        queues: list[str],
        tags: list[str],
        limits: Limits,
        want: int,
        now: datetime | None,
    ) -> list[int]:
        """Under the limits lock: what runs now, and which candidates fit."""
        active = Active()
        cur = await conn.execute(Q["active_groups"])
        for queue, handler, key, key_limit, count in await cur.fetchall():
            active.add(queue, handler, key, key_limit, count)
        if active.global_full(limits):
            return []
        chosen: list[int] = []
        window = max(want * 4, 200)
        # A window full of runs whose key filled up is passed over: the next round
        # skips those keys in SQL. A few rounds bound the work under the lock.
        for _ in range(LIMITED_ROUNDS):
            full_queues = set(active.full_queues(limits))
            cur = await conn.execute(
                Q["limited_candidates"],
                {
                    "queues": [q for q in queues if q not in full_queues],
                    "tags": tags,
                    "limited_handlers": list(limits.handlers),
                    "limited_queues": list(limits.queues),
                    "global_limit": limits.global_max is not None,
                    "full_keys": active.full_keys(),
                    "full_handlers": active.full_handlers(limits),
                    "chosen": chosen,
                    "window": window,
                    "now": now,
                },
            )
            candidates = [Candidate(*row) for row in await cur.fetchall()]
            chosen += choose(candidates, active, limits, want - len(chosen))
            if len(chosen) >= want or len(candidates) < window:
                break
        return chosen
