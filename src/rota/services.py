"""Use cases shared by the library API, the CLI and (later) the HTTP API.

Each takes a store and plain values, validates everything before writing anything, and
returns domain values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.clock import Clock
from rota.domain.limits import Limit
from rota.domain.runs import (
    Attempt,
    LogLine,
    NewRun,
    Run,
    RunFilter,
    check_idempotency_key,
    check_name,
    check_positive_int,
    check_priority,
    check_tags,
    check_timeout,
    encode_json,
    replay_request,
)
from rota.domain.search import RunSearch
from rota.domain.states import RunState
from rota.domain.values import check_id, check_instant, check_text
from rota.domain.workers import WorkerInfo, WorkerState
from rota.errors import InvalidArgument, InvalidTransition, RunNotFound, WorkerNotFound
from rota.handlers import Registry
from rota.observe import producing
from rota.store.port import Store

# Which namespaces a caller may see: None means every one.
Namespaces = Collection[str] | None
MAX_PAGE = 500
MAX_REPLAY_BATCH = 100

JOB_FIELDS = (
    "handler",
    "payload",
    "run_at",
    "priority",
    "idempotency_key",
    "queue",
    "max_attempts",
    "timeout",
    "tags",
    "concurrency_key",
    "key_limit",
    "deadline",
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
    tags: tuple[str, ...] | list[str] | None = None  # in addition to the handler's
    concurrency_key: str | None = None
    key_limit: int | None = None  # cap for concurrency_key (default: the handler's)
    deadline: datetime | None = None  # start by then, or be cancelled

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


def new_run(
    registry: Registry,
    job: RunRequest,
    now: datetime | None = None,
    correlation_id: str | None = None,
) -> NewRun:
    """Validate a job against its handler's registration and defaults. ``now`` (the
    caller's clock) is only used to refuse a deadline that has already passed."""
    spec = registry.require(job.handler)
    check_idempotency_key(job.idempotency_key)
    deadline = check_instant("deadline", job.deadline) if job.deadline is not None else None
    if deadline is not None and now is not None and deadline <= now:
        raise InvalidArgument("deadline", job.deadline, f"an instant after now ({now.isoformat()})")
    key = check_name("concurrency_key", job.concurrency_key) if job.concurrency_key else None
    if job.key_limit is not None and key is None:
        raise InvalidArgument("key_limit", job.key_limit, "to come with a concurrency_key")
    key_limit = check_positive_int("key_limit", job.key_limit) if job.key_limit else spec.key_limit
    extra_tags = check_tags(job.tags) if job.tags is not None else ()
    return NewRun(
        handler=spec.name,
        payload_json=encode_json("payload", job.payload),
        queue=check_name("queue", job.queue) if job.queue is not None else spec.queue,
        priority=check_priority(job.priority) if job.priority is not None else spec.priority,
        run_at=check_instant("run_at", job.run_at) if job.run_at is not None else None,
        max_attempts=(
            check_positive_int("max_attempts", job.max_attempts)
            if job.max_attempts is not None
            else spec.max_attempts
        ),
        timeout=check_timeout(job.timeout) if job.timeout is not None else spec.timeout,
        idempotency_key=job.idempotency_key,
        tags=tuple(sorted(set(spec.tags) | set(extra_tags))),
        concurrency_key=key,
        concurrency_limit=key_limit if key else None,
        deadline=deadline,
        correlation_id=correlation_id,
    )


async def enqueue(store: Store, clock: Clock, runs: Sequence[NewRun]) -> list[int]:
    return [e.run_id for e in await producing.enqueue(store, runs, clock.db_now())]


async def get_run(store: Store, run_id: int, namespaces: Namespaces = None) -> Run:
    """The run; RunNotFound also when it is outside ``namespaces`` (None: all), so a
    caller cannot tell another team's run from a missing one."""
    run = await store.get_run(check_id("run_id", run_id))
    if run is None or (namespaces is not None and run.namespace not in namespaces):
        raise RunNotFound(run_id)
    return run


@dataclass(frozen=True)
class RunDetail:
    run: Run
    attempts: list[Attempt]
    logs: list[LogLine]


async def run_detail(store: Store, run_id: int, namespaces: Namespaces = None) -> RunDetail:
    run = await get_run(store, run_id, namespaces)
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
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidArgument("limit", limit, "an integer 1-1000")
    for name, text in (("handler", handler), ("queue", queue)):
        if text is not None:
            check_text(name, text, max_length=200)
    if before_id is not None:
        check_id("before_id", before_id)
    return await store.list_runs(
        RunFilter(
            state=RunState(state) if state else None,
            handler=handler,
            queue=queue,
            before_id=before_id,
            limit=limit,
        )
    )


async def cancel(store: Store, clock: Clock, run_id: int, namespaces: Namespaces = None) -> Run:
    check_id("run_id", run_id)
    if namespaces is not None:
        await get_run(store, run_id, namespaces)  # a run's namespace never changes
    return await store.request_cancel(run_id, clock.db_now())


async def replay(
    store: Store,
    clock: Clock,
    run_id: int,
    namespaces: Namespaces = None,
    correlation_id: str | None = None,
) -> int:
    """A fresh run repeating a finished one (see :func:`replay_request`); replaying the
    same run again returns the same new run."""
    check_id("run_id", run_id)
    if namespaces is None and correlation_id is None:
        return await store.replay(run_id, clock.db_now())
    fresh = replay_request(run_id, await get_run(store, run_id, namespaces))
    fresh = dataclasses.replace(fresh, correlation_id=correlation_id)
    [enqueued] = await store.enqueue([fresh], clock.db_now())
    return enqueued.run_id


@dataclass(frozen=True)
class ReplayResult:
    run_id: int
    new_run_id: int | None  # None when it could not be replayed
    error: str | None = None


async def replay_many(
    store: Store,
    clock: Clock,
    run_ids: Sequence[int],
    namespaces: Namespaces = None,
    correlation_id: str | None = None,
) -> list[ReplayResult]:
    """Replay each run on its own: one that cannot be replayed (missing, live, another
    namespace's) is reported and does not stop the others."""
    if not 1 <= len(run_ids) <= MAX_REPLAY_BATCH:
        raise InvalidArgument("run_ids", len(run_ids), f"1-{MAX_REPLAY_BATCH} run ids")
    results = []
    for run_id in dict.fromkeys(run_ids):
        try:
            new_id = await replay(store, clock, run_id, namespaces, correlation_id)
            results.append(ReplayResult(run_id, new_id))
        except (RunNotFound, InvalidTransition) as exc:
            results.append(ReplayResult(run_id, None, str(exc)))
    return results


async def search_runs(
    store: Store, search: RunSearch, job: tuple[str, str] | None = None
) -> list[Run]:
    """Runs matching ``search``; ``job`` = (namespace, name) narrows to one job's runs
    (none if there is no such job)."""
    check_search(search)
    if job is not None:
        found = await store.get_job(*job)
        if found is None or (search.namespaces is not None and job[0] not in search.namespaces):
            return []
        search = dataclasses.replace(search, job_id=found.id)
    return await store.search_runs(search)


def check_search(search: RunSearch) -> None:
    """Every value of a search is one the stores can compare with: bounded text
    without NUL, instants in range, ids that fit."""
    limit = search.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidArgument("limit", limit, f"an integer 1-{MAX_PAGE}")
    if search.text is not None:
        if len(search.text) < 1:
            raise InvalidArgument("q", search.text, "1-200 characters")
        check_text("q", search.text, max_length=200)
    for name, text in (("handler", search.handler), ("queue", search.queue), ("tag", search.tag)):
        if text is not None:
            check_text(name, text, max_length=200)
    for name, instant in (
        ("created_after", search.created_after),
        ("created_before", search.created_before),
    ):
        if instant is not None:
            check_instant(name, instant)
    for name, number in (("before_id", search.before_id), ("job_id", search.job_id)):
        if number is not None:
            check_id(name, number)
    for namespace in search.namespaces or ():
        check_text("namespace", namespace, max_length=200)


# -- claim-time controls and the worker registry ------------------------------
async def list_workers(store: Store) -> list[WorkerInfo]:
    return await store.list_workers()


async def drain_worker(store: Store, clock: Clock, node_id: str) -> None:
    """The worker stops claiming and finishes what it holds (it notices within one
    registry heartbeat)."""
    if not await store.set_worker_state(node_id, WorkerState.DRAINING):
        raise WorkerNotFound(node_id)


async def resume_worker(store: Store, clock: Clock, node_id: str) -> None:
    if not await store.set_worker_state(node_id, WorkerState.ACTIVE):
        raise WorkerNotFound(node_id)


async def set_limit(store: Store, scope: str, name: str, max_running: int) -> Limit:
    limit = Limit.parse(scope, name, max_running)
    await store.set_limit(limit)
    return limit


async def clear_limit(store: Store, scope: str, name: str) -> None:
    if not await store.clear_limit(scope, name):
        raise InvalidArgument("limit", f"{scope}:{name}", "an existing limit (see list_limits)")
