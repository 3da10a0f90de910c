"""SQLite: claim-time limits, start-by deadlines and the worker registry."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from rota.domain.limits import Limit
from rota.domain.workers import UnclaimableRun, WorkerInfo, WorkerState
from rota.store.sqlite.base import Q, SqliteBase, _ts


class SqliteRegistry(SqliteBase):
    async def set_limit(self, limit: Limit) -> None:
        params = {"scope": limit.scope.value, "name": limit.name, "max_running": limit.max_running}
        await self._write_rows("set_limit", params)

    async def clear_limit(self, scope: str, name: str) -> bool:
        return bool(await self._write_rows("clear_limit", {"scope": scope, "name": name}))

    async def list_limits(self) -> list[Limit]:
        return [
            Limit.parse(r["scope"], r["name"], r["max_running"])
            for r in await self._rows("limits", {})
        ]

    async def expire_deadlines(
        self, now: datetime | None, leader_term: int | None = None
    ) -> list[int]:
        def work(conn: sqlite3.Connection) -> list[int]:
            with self._write(conn, now) as at:
                if not self._term_holds(conn, leader_term):
                    return []
                return [row[0] for row in conn.execute(Q["expire_deadlines"], {"now": at})]

        return await self._call(work)

    async def register_worker(self, worker: WorkerInfo, now: datetime | None) -> None:
        params = {
            "node_id": worker.node_id,
            "host": worker.host,
            "pid": worker.pid,
            "version": worker.version,
            "queues": json.dumps(list(worker.queues)),
            "tags": json.dumps(sorted(worker.tags)),
            "concurrency": worker.concurrency,
        }
        await self._write_rows("register_worker", params, now)

    async def worker_heartbeat(self, node_id: str, now: datetime | None) -> WorkerState | None:
        rows = await self._write_rows("worker_heartbeat", {"node_id": node_id}, now)
        return WorkerState(rows[0][0]) if rows else None

    async def set_worker_state(self, node_id: str, state: WorkerState) -> bool:
        params = {"node_id": node_id, "state": state.value}
        return bool(await self._write_rows("set_worker_state", params))

    async def deregister_worker(self, node_id: str) -> None:
        await self._write_rows("deregister_worker", {"node_id": node_id})

    async def list_workers(self) -> list[WorkerInfo]:
        return [
            WorkerInfo(
                r["node_id"],
                r["host"],
                r["pid"],
                r["version"],
                tuple(r["queues"]),
                tuple(r["tags"]),
                r["concurrency"],
                WorkerState(r["state"]),
                r["started_at"],
                r["heartbeat_at"],
            )
            for r in await self._rows("list_workers", {})
        ]

    async def mark_dead_workers(
        self, dead_after: float, now: datetime | None, leader_term: int | None = None
    ) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            with self._write(conn, now) as at:
                if not self._term_holds(conn, leader_term):
                    return []
                params = {"now": at, "dead_after": dead_after}
                dead = [row[0] for row in conn.execute(Q["silent_workers"], params)]
                for node_id in dead:
                    conn.execute(Q["mark_dead"], {"node_id": node_id})
                    conn.execute(Q["end_leases_of"], {"node_id": node_id, "now": at})
                return dead

        return await self._call(work)

    async def prune_workers(self, older_than: datetime) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with self._write(conn):
                params = {"older_than": _ts(older_than)}
                return conn.execute(Q["prune_workers"], params).rowcount

        return await self._call(work)

    async def unclaimable_runs(self, now: datetime | None, limit: int) -> list[UnclaimableRun]:
        def work(conn: sqlite3.Connection) -> list[UnclaimableRun]:
            at = _ts(now) or conn.execute(Q["db_now"]).fetchone()[0]
            rows = conn.execute(Q["unclaimable_runs"], {"now": at, "limit": limit})
            return [UnclaimableRun(r[0], r[1], tuple(json.loads(r[2]))) for r in rows]

        return await self._call(work)
