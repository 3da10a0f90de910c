"""PostgreSQL: jobs (schedules) and the leader lease."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rota.domain.jobs import Job, JobAdvance, JobSpec, UnreadableJob, spec_to_json
from rota.store.port import LeaderInfo, LeaderTerm
from rota.store.postgres.base import PgBase, Q, _job, log
from rota.store.rows import due_job_from_row, readable_jobs


class PgJobs(PgBase):
    # -- jobs and schedules -------------------------------------------------
    async def now(self, now: datetime | None) -> datetime:
        if now is not None:
            return now
        rows = await self._tuples("db_now", {"now": None})
        return rows[0][0]  # type: ignore[no-any-return]

    async def save_job(
        self, spec: JobSpec, cursor: datetime, next_fire_at: datetime | None, now: datetime | None
    ) -> Job:
        rows = await self._rows(
            "save_job",
            {
                "namespace": spec.namespace,
                "name": spec.name,
                "spec": spec_to_json(spec),
                "cursor": cursor,
                "next_fire_at": next_fire_at,
                "now": now,
            },
        )
        return _job(rows[0])

    async def get_job(self, namespace: str, name: str) -> Job | None:
        rows = await self._rows("get_job", {"namespace": namespace, "name": name})
        return _job(rows[0]) if rows else None

    async def get_job_by_id(self, job_id: int) -> Job | None:
        rows = await self._rows("get_job_by_id", {"id": job_id})
        return _job(rows[0]) if rows else None

    async def list_jobs(self, namespace: str | None = None) -> list[Job]:
        return readable_jobs(await self._rows("list_jobs", {"namespace": namespace}), log)

    async def delete_job(self, namespace: str, name: str) -> bool:
        return bool(await self._tuples("delete_job", {"namespace": namespace, "name": name}))

    async def set_job_paused(
        self,
        namespace: str,
        name: str,
        paused: bool,
        cursor: datetime,
        next_fire_at: datetime | None,
        now: datetime | None,
    ) -> Job | None:
        rows = await self._rows(
            "set_job_paused",
            {
                "namespace": namespace,
                "name": name,
                "paused": paused,
                "cursor": cursor,
                "next_fire_at": next_fire_at,
                "now": now,
            },
        )
        return _job(rows[0]) if rows else None

    async def due_jobs(self, until: datetime, limit: int) -> list[Job | UnreadableJob]:
        rows = await self._rows("due_jobs", {"until": until, "limit": limit})
        return [due_job_from_row(row, row["spec"]) for row in rows]

    async def set_job_aside(
        self, job_id: int, error: str, retry_at: datetime, now: datetime | None
    ) -> None:
        params = {"id": job_id, "error": error, "retry_at": retry_at, "now": now}
        await self._tuples("set_job_aside", params)

    async def job_run_counts(self, job_id: int) -> tuple[int, int]:
        [(active, waiting)] = await self._tuples("job_run_counts", {"job_id": job_id})
        return int(active), int(waiting)

    async def advance_jobs(
        self, advances: Sequence[JobAdvance], now: datetime | None, leader_term: int | None
    ) -> set[int]:
        if not advances:
            return set()
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute(
                Q["advance_jobs"],
                {
                    "ids": [a.job_id for a in advances],
                    "expected": [a.expected_cursor for a in advances],
                    "cursors": [a.cursor for a in advances],
                    "next_fire_ats": [a.next_fire_at for a in advances],
                    "now": now,
                    "term": leader_term,
                },
            )
            advanced = {row[0] for row in await cur.fetchall()}
            runs = [run for a in advances if a.job_id in advanced for run in a.runs]
            await self.enqueue_on(conn, runs, now)
        return advanced

    # -- leadership ---------------------------------------------------------
    async def acquire_leadership(
        self, holder: str, term: int | None, lease_seconds: float, now: datetime | None
    ) -> int | None:
        rows = await self._tuples(
            "acquire_leadership",
            {"holder": holder, "term": term, "lease_seconds": lease_seconds, "now": now},
        )
        return int(rows[0][0]) if rows else None

    async def resign_leadership(self, holder: str, term: int, now: datetime | None) -> None:
        await self._tuples("resign_leadership", {"holder": holder, "term": term, "now": now})

    async def leader(self) -> LeaderInfo | None:
        rows = await self._tuples("leader", {})
        return LeaderInfo(*rows[0]) if rows else None

    async def leader_history(self, limit: int) -> list[LeaderTerm]:
        return [LeaderTerm(*row) for row in await self._tuples("leader_history", {"limit": limit})]
