"""Turning database rows into domain values, shared by both adapters.

Adapters hand over rows as dicts whose instants are already aware datetimes and whose
JSON columns are already decoded; this module only assembles the frozen values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rota.domain.jobs import Job, UnreadableJob, planning_error_text, spec_from_json
from rota.domain.labels import labels_from_stored
from rota.domain.runs import Attempt, ClaimedRun, LogLine, Run
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.workers import WorkerInfo, WorkerState
from rota.errors import JobUnreadable


def run_from_row(row: Mapping[str, Any]) -> Run:
    return Run(
        id=row["id"],
        namespace=row["namespace"],
        handler=row["handler"],
        queue=row["queue"],
        state=RunState(row["state"]),
        payload=row["payload"],
        priority=row["priority"],
        run_at=row["run_at"],
        attempt=row["attempt"],
        max_attempts=row["max_attempts"],
        fence=row["fence"],
        timeout=row["timeout_seconds"],
        worker_id=row["worker_id"],
        lease_expires_at=row["lease_expires_at"],
        idempotency_key=row["idempotency_key"],
        result=row["result"],
        error=row["error"],
        cancel_requested=bool(row["cancel_requested"]),
        lost_count=row["lost_count"],
        replay_of=row["replay_of"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        job_id=row["job_id"],
        slot_at=row["slot_at"],
        tags=tuple(row["tags"] or ()),
        concurrency_key=row["concurrency_key"],
        concurrency_limit=row["concurrency_limit"],
        deadline=row["deadline"],
        correlation_id=row["correlation_id"],
        trace_context=row["trace_context"],
        owner=row["owner"],
        labels=labels_from_stored(row["labels"]),
    )


def attempt_from_row(row: Mapping[str, Any]) -> Attempt:
    return Attempt(
        run_id=row["run_id"],
        attempt=row["attempt"],
        fence=row["fence"],
        worker_id=row["worker_id"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        outcome=AttemptOutcome(row["outcome"]),
        error=row["error"],
    )


def log_from_row(row: Mapping[str, Any], fields_json: str) -> LogLine:
    return LogLine(
        run_id=row["run_id"],
        attempt=row["attempt"],
        at=row["at"],
        level=row["level"],
        message=row["message"],
        fields_json=fields_json,
        seq=row["id"],
    )


def job_from_row(row: Mapping[str, Any], spec: Any) -> Job:
    """The job; JobUnreadable if its stored definition cannot be read."""
    try:
        parsed = spec_from_json(spec)
    except Exception as exc:  # noqa: BLE001 - whatever the parse raised, it is this row's
        reason = planning_error_text(exc)
        raise JobUnreadable(row["id"], row["namespace"], row["name"], reason) from None
    return Job(
        id=row["id"],
        spec=parsed,
        paused=bool(row["paused"]),
        cursor=row["cursor"],
        next_fire_at=row["next_fire_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        planning_error=row.get("planning_error"),
        planning_failed_at=row.get("planning_failed_at"),
        planning_failures=row.get("planning_failures") or 0,
        planning_retry_at=row.get("planning_retry_at"),
    )


def due_job_from_row(row: Mapping[str, Any], spec: Any) -> Job | UnreadableJob:
    """The job, or, if its stored definition cannot be read, a value saying so: one
    unreadable row must not fail the read of every due job."""
    try:
        return job_from_row(row, spec)
    except JobUnreadable as exc:
        return UnreadableJob(
            id=exc.job_id,
            namespace=exc.namespace,
            name=exc.name,
            planning_failures=row.get("planning_failures") or 0,
            error=exc.reason,
        )


def readable_jobs(rows: Iterable[Mapping[str, Any]], log: Any) -> list[Job]:
    """The jobs of ``rows`` that can be read; each one that cannot is logged and left
    out, so one bad row does not fail a listing of every namespace's jobs."""
    jobs = []
    for row in rows:
        try:
            jobs.append(job_from_row(row, row["spec"]))
        except JobUnreadable as exc:
            log.warning("job left out of a listing", job_id=exc.job_id, error=str(exc))
    return jobs


def claimed_from_row(row: Mapping[str, Any]) -> ClaimedRun:
    return ClaimedRun(
        run_id=row["id"],
        handler=row["handler"],
        payload=row["payload"],
        queue=row["queue"],
        attempt=row["attempt"],
        max_attempts=row["max_attempts"],
        fence=row["fence"],
        timeout=row["timeout_seconds"],
        lost_count=row["lost_count"],
        idempotency_key=row["idempotency_key"],
        lease_expires_at=row["lease_expires_at"],
        correlation_id=row["correlation_id"],
        job_id=row["job_id"],
        pickup_delay=row["pickup_delay"],
        trace_context=row["trace_context"],
        step_input=row["step_input"],
        slot_at=row["slot_at"],
    )


def worker_from_row(row: Mapping[str, Any]) -> WorkerInfo:
    return WorkerInfo(
        row["node_id"],
        row["host"],
        row["pid"],
        row["version"],
        tuple(row["queues"]),
        tuple(row["tags"]),
        row["concurrency"],
        WorkerState(row["state"]),
        row["started_at"],
        row["heartbeat_at"],
    )
