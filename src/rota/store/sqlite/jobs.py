"""SQLite: jobs (schedules) and the leader lease."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from rota.domain.jobs import Job, JobAdvance, JobSpec, UnreadableJob, spec_to_json
from rota.store.port import LeaderInfo, LeaderTerm
from rota.store.rows import due_job_from_row, job_from_row, readable_jobs
from rota.store.sqlite.base import Q, SqliteBase, _decoded, _ts

log = structlog.get_logger("rota.store.sqlite")


class SqliteJobs(SqliteBase):
    async def now(self, now: datetime | None) -> datetime:
        if now is not None:
            return now
        reading = await self._call(lambda conn: conn.execute(Q["db_now"]).fetchone()[0])
        return datetime.fromtimestamp(reading, UTC)

    async def _jobs(self, query: str, params: dict[str, Any]) -> list[Job]:
        return [job_from_row(row, row["spec"]) for row in await self._rows(query, params)]

    async def _write_jobs(
        self, query: str, params: dict[str, Any], now: datetime | None
    ) -> list[Job]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            with self._write(conn, now) as at:
                return [_decoded(row) for row in conn.execute(Q[query], {**params, "now": at})]

        return [job_from_row(row, row["spec"]) for row in await self._call(work)]

    async def save_job(
        self, spec: JobSpec, cursor: datetime, next_fire_at: datetime | None, now: datetime | None
    ) -> Job:
        params = {
            "namespace": spec.namespace,
            "name": spec.name,
            "spec": spec_to_json(spec),
            "cursor": _ts(cursor),
            "next_fire_at": _ts(next_fire_at),
        }
        [job] = await self._write_jobs("save_job", params, now)
        return job

    async def get_job(self, namespace: str, name: str) -> Job | None:
        jobs = await self._jobs("get_job", {"namespace": namespace, "name": name})
        return jobs[0] if jobs else None

    async def get_job_by_id(self, job_id: int) -> Job | None:
        jobs = await self._jobs("get_job_by_id", {"id": job_id})
        return jobs[0] if jobs else None

    async def list_jobs(self, namespace: str | None = None) -> list[Job]:
        return readable_jobs(await self._rows("list_jobs", {"namespace": namespace}), log)

    async def delete_job(self, namespace: str, name: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            with self._write(conn):
                params = {"namespace": namespace, "name": name}
                return bool(conn.execute(Q["delete_job"], params).fetchall())

        return await self._call(work)

    async def set_job_paused(
        self,
        namespace: str,
        name: str,
        paused: bool,
        cursor: datetime,
        next_fire_at: datetime | None,
        now: datetime | None,
    ) -> Job | None:
        params = {
            "namespace": namespace,
            "name": name,
            "paused": paused,
            "cursor": _ts(cursor),
            "next_fire_at": _ts(next_fire_at),
        }
        jobs = await self._write_jobs("set_job_paused", params, now)
        return jobs[0] if jobs else None

    async def due_jobs(self, until: datetime, limit: int) -> list[Job | UnreadableJob]:
        rows = await self._rows("due_jobs", {"until": _ts(until), "limit": limit})
        return [due_job_from_row(row, row["spec"]) for row in rows]

    async def set_job_aside(
        self, job_id: int, error: str, retry_at: datetime, now: datetime | None
    ) -> None:
        params = {"id": job_id, "error": error, "retry_at": _ts(retry_at)}
        await self._write_rows("set_job_aside", params, now)

    async def job_run_counts(self, job_id: int) -> tuple[int, int]:
        def work(conn: sqlite3.Connection) -> tuple[int, int]:
            active, waiting = conn.execute(Q["job_run_counts"], {"job_id": job_id}).fetchone()
            return int(active), int(waiting)

        return await self._call(work)

    async def advance_jobs(
        self, advances: Sequence[JobAdvance], now: datetime | None, leader_term: int | None
    ) -> set[int]:
        def work(conn: sqlite3.Connection) -> set[int]:
            advanced: set[int] = set()
            with self._write(conn, now) as at:
                for advance in advances:
                    params = {
                        "id": advance.job_id,
                        "expected_cursor": _ts(advance.expected_cursor),
                        "cursor": _ts(advance.cursor),
                        "next_fire_at": _ts(advance.next_fire_at),
                        "now": at,
                        "term": leader_term,
                    }
                    if conn.execute(Q["advance_jobs"], params).fetchall():
                        advanced.add(advance.job_id)
                        self._insert_runs(conn, advance.runs, at)
            return advanced

        if not advances:
            return set()
        return await self._call(work)

    async def acquire_leadership(
        self, holder: str, term: int | None, lease_seconds: float, now: datetime | None
    ) -> int | None:
        def work(conn: sqlite3.Connection) -> int | None:
            with self._write(conn, now) as at:
                params = {"holder": holder, "term": term, "lease_seconds": lease_seconds, "now": at}
                row = conn.execute(Q["acquire_leadership"], params).fetchone()
            return int(row[0]) if row else None

        return await self._call(work)

    async def resign_leadership(self, holder: str, term: int, now: datetime | None) -> None:
        def work(conn: sqlite3.Connection) -> None:
            with self._write(conn, now) as at:
                params = {"holder": holder, "term": term, "now": at}
                conn.execute(Q["resign_leadership"], params)

        await self._call(work)

    async def leader(self) -> LeaderInfo | None:
        rows = await self._rows("leader", {})
        if not rows:
            return None
        row = rows[0]
        return LeaderInfo(row["holder"], row["term"], row["acquired_at"], row["expires_at"])

    async def leader_history(self, limit: int) -> list[LeaderTerm]:
        rows = await self._rows("leader_history", {"limit": limit})
        return [LeaderTerm(r["term"], r["holder"], r["acquired_at"]) for r in rows]
