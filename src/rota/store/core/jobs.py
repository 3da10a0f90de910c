"""The one SQL store: jobs (schedules), the planner's writes and the leader lease."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import structlog

from rota.domain.jobs import (
    Job,
    JobAdvance,
    JobSpec,
    RecentStart,
    UnreadableJob,
    spec_to_json,
)
from rota.domain.states import RunState
from rota.store.core.base import CoreBase
from rota.store.dialect import Session
from rota.store.port import LeaderInfo, LeaderTerm
from rota.store.rows import due_job_from_row, job_from_row, readable_jobs

log = structlog.get_logger("rota.store")


def _jobs(rows: Sequence[dict[str, Any]]) -> list[Job]:
    return [job_from_row(row, row["spec"]) for row in rows]


class CoreJobs(CoreBase):
    async def now(self, now: datetime | None) -> datetime:
        if now is not None:
            return now
        [row] = await self._d.rows("db_now", {}, None)
        reading: datetime = row["now"]
        return reading

    async def save_job(
        self, spec: JobSpec, cursor: datetime, next_fire_at: datetime | None, now: datetime | None
    ) -> Job:
        params = {
            "namespace": spec.namespace,
            "name": spec.name,
            "spec": spec_to_json(spec),
            "cursor": cursor,
            "next_fire_at": next_fire_at,
        }
        [job] = _jobs(await self._d.write("save_job", params, now))
        return job

    async def get_job(self, namespace: str, name: str) -> Job | None:
        jobs = _jobs(await self._d.rows("get_job", {"namespace": namespace, "name": name}))
        return jobs[0] if jobs else None

    async def get_job_by_id(self, job_id: int) -> Job | None:
        jobs = _jobs(await self._d.rows("get_job_by_id", {"id": job_id}))
        return jobs[0] if jobs else None

    async def list_jobs(self, namespace: str | None = None) -> list[Job]:
        return readable_jobs(await self._d.rows("list_jobs", {"namespace": namespace}), log)

    async def delete_job(self, namespace: str, name: str) -> bool:
        params = {"namespace": namespace, "name": name}
        return bool(await self._d.write("delete_job", params))

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
            "cursor": cursor,
            "next_fire_at": next_fire_at,
        }
        jobs = _jobs(await self._d.write("set_job_paused", params, now))
        return jobs[0] if jobs else None

    async def due_jobs(self, until: datetime, limit: int) -> list[Job | UnreadableJob]:
        rows = await self._d.rows("due_jobs", {"until": until, "limit": limit})
        return [due_job_from_row(row, row["spec"]) for row in rows]

    async def set_job_aside(
        self, job_id: int, error: str, retry_at: datetime, now: datetime | None
    ) -> None:
        params = {"id": job_id, "error": error, "retry_at": retry_at}
        await self._d.write("set_job_aside", params, now)

    async def recent_starts(
        self, job_ids: Sequence[int], per_job: int
    ) -> dict[int, list[RecentStart]]:
        starts: dict[int, list[RecentStart]] = {job_id: [] for job_id in job_ids}
        if not job_ids:
            return starts
        params = {"job_ids": list(job_ids), "per_job": per_job}
        for row in await self._d.rows("recent_starts", params):
            state = RunState(row["state"])
            starts[int(row["job_id"])].append(
                RecentStart(
                    row["slot_at"],
                    row["started_at"],
                    run_id=int(row["id"]),
                    state=state,
                    reason=row["error"] if state is RunState.SKIPPED else None,
                )
            )
        for job_id, found in starts.items():
            # SQLite reads each home's newest: keep the newest of both, oldest first.
            starts[job_id] = sorted(found, key=lambda s: s.slot_at)[-per_job:]
        return starts

    async def advance_jobs(
        self, advances: Sequence[JobAdvance], now: datetime | None, leader_term: int | None
    ) -> set[int]:
        if not advances:
            return set()
        items = [
            {
                "id": a.job_id,
                "expected_cursor": a.expected_cursor,
                "cursor": a.cursor,
                "next_fire_at": a.next_fire_at,
            }
            for a in advances
        ]

        async def advance(session: Session) -> set[int]:
            if not await self._term_holds(session, leader_term):
                return set()
            advanced = {row["id"] for row in await session.batch("advance_jobs", items)}
            runs = [run for a in advances if a.job_id in advanced for run in a.runs]
            await self._insert_runs(session, runs)
            return advanced

        advanced = await self._d.in_transaction(now, advance)
        if advanced:
            self._d.runs_committed()  # planned ahead: an idle worker wakes for the first
        return advanced

    # -- leadership -------------------------------------------------------------
    async def acquire_leadership(
        self, holder: str, term: int | None, lease_seconds: float, now: datetime | None
    ) -> int | None:
        params = {"holder": holder, "term": term, "lease_seconds": lease_seconds}
        rows = await self._d.write("acquire_leadership", params, now)
        return int(rows[0]["term"]) if rows else None

    async def resign_leadership(self, holder: str, term: int, now: datetime | None) -> None:
        await self._d.write("resign_leadership", {"holder": holder, "term": term}, now)

    async def leader(self) -> LeaderInfo | None:
        rows = await self._d.rows("leader")
        if not rows:
            return None
        row = rows[0]
        return LeaderInfo(row["holder"], row["term"], row["acquired_at"], row["expires_at"])

    async def leader_history(self, limit: int) -> list[LeaderTerm]:
        rows = await self._d.rows("leader_history", {"limit": limit})
        return [LeaderTerm(row["term"], row["holder"], row["acquired_at"]) for row in rows]
