"""Use cases shared by the library API, the CLI and (later) the HTTP API.

Each takes a store and plain values, validates everything before writing anything, and
returns domain values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.clock import Clock, require_aware
from rota.domain.runs import (
    Attempt,
    LogLine,
    NewRun,
    Run,
    RunFilter,
    check_name,
    check_positive_int,
    check_priority,
    check_timeout,
    encode_json,
)
from rota.domain.states import RunState
from rota.errors import InvalidArgument, RunNotFound
from rota.handlers import Registry
from rota.store.port import Store

JOB_FIELDS = (
    "handler",
    "payload",
    "run_at",
    "priority",
    "idempotency_key",
    "queue",
    "max_attempts",
    "timeout",
)


@dataclass(frozen=True)
class RunRequest:
    """One run to enqueue, for :meth:`rota.App.enqueue_many` (or a dict of these fields)."""

    handler: str
    payload: Any = None
    run_at: datetime | None = None
    priority: int | None = None
    idempotency_key: str | None = None
    queue: str | None = None
    max_attempts: int | None = None
    timeout: float | None = None

    @classmethod
    def coerce(cls, value: RunRequest | Mapping[str, Any]) -> RunRequest:
        if isinstance(value, RunRequest):
            return value
        if not isinstance(value, Mapping):
            raise InvalidArgument(
                "run request", value, "a rota.RunRequest or a dict with a 'handler' key"
            )
        unknown = set(value) - set(JOB_FIELDS)
        if unknown or "handler" not in value:
            raise InvalidArgument("run request", dict(value), f"a dict with keys from {JOB_FIELDS}")
        return cls(**value)


def new_run(registry: Registry, job: RunRequest) -> NewRun:
    """Validate a job against its handler's registration and defaults."""
    spec = registry.require(job.handler)
    if job.idempotency_key is not None and (
        not isinstance(job.idempotency_key, str) or not 1 <= len(job.idempotency_key) <= 255
    ):
        raise InvalidArgument("idempotency_key", job.idempotency_key, "a string of 1-255 chars")
    return NewRun(
        handler=spec.name,
        payload_json=encode_json("payload", job.payload),
        queue=check_name("queue", job.queue) if job.queue is not None else spec.queue,
        priority=check_priority(job.priority) if job.priority is not None else spec.priority,
        run_at=require_aware(job.run_at, "run_at") if job.run_at is not None else None,
        max_attempts=(
            check_positive_int("max_attempts", job.max_attempts)
            if job.max_attempts is not None
            else spec.max_attempts
        ),
        timeout=check_timeout(job.timeout) if job.timeout is not None else spec.timeout,
        idempotency_key=job.idempotency_key,
    )


async def enqueue(store: Store, clock: Clock, runs: Sequence[NewRun]) -> list[int]:
    return [e.run_id for e in await store.enqueue(runs, clock.db_now())]


async def get_run(store: Store, run_id: int) -> Run:
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFound(run_id)
    return run


@dataclass(frozen=True)
class RunDetail:
    run: Run
    attempts: list[Attempt]
    logs: list[LogLine]


async def run_detail(store: Store, run_id: int) -> RunDetail:
    run = await get_run(store, run_id)
    return RunDetail(run, await store.attempts(run_id), await store.logs(run_id))


async def list_runs(
    store: Store,
    state: str | None = None,
    handler: str | None = None,
    queue: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Run]:
    if state is not None:
        try:
            state = RunState(state)
        except ValueError:
            allowed = ", ".join(s.value for s in RunState)
            raise InvalidArgument("state", state, f"one of {allowed}") from None
    if not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidArgument("limit", limit, "an integer 1-1000")
    return await store.list_runs(
        RunFilter(
            state=RunState(state) if state else None,
            handler=handler,
            queue=queue,
            before_id=before_id,
            limit=limit,
        )
    )


async def cancel(store: Store, clock: Clock, run_id: int) -> Run:
    return await store.request_cancel(run_id, clock.db_now())


async def replay(store: Store, clock: Clock, run_id: int) -> int:
    return await store.replay(run_id, clock.db_now())
