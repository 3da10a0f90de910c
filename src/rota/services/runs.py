"""Runs: the use cases shared by the library API, the CLI, the HTTP API and the dashboard.

Each takes a store (and a clock where time matters) and plain values, validates
everything before writing anything, and returns domain values. The reading API, by
concept:

- runs: :func:`search_runs` (filters, text, keyset pages), :func:`list_runs`,
  :func:`get_run`, :func:`run_detail` (the run with its attempts and log lines);
- workers and the leader: rota.services.cluster; limits, rates and breakers:
  rota.services.controls;
- jobs (schedules): rota.services.schedules (:func:`~rota.services.schedules.list_jobs`,
  :func:`~rota.services.schedules.get_job`); API keys and the audit log: rota.services.access.

Writing: :func:`new_run` + :func:`enqueue`, :func:`cancel`, :func:`replay`,
:func:`replay_many`; jobs in rota.services.schedules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from rota.clock import Clock
from rota.domain.labels import check_labels, check_owner
from rota.domain.overlap import OVERLAP_PREFIX
from rota.domain.runs import (
    Attempt,
    LogLine,
    NewRun,
    Run,
    check_priority,
    check_tags,
    encode_json,
    replay_request,
)
from rota.domain.search import RunSearch
from rota.domain.states import RunState
from rota.domain.values import check_id, check_instant, check_text, one_of
from rota.errors import InvalidArgument, InvalidTransition, RunNotFound
from rota.handlers import Registry
from rota.observe import producing
from rota.payloads import check_payload
from rota.store.port import Store

T = TypeVar("T")
# Which namespaces a caller may see: None means every one.
Namespaces = Collection[str] | None
MAX_PAGE = 500
MAX_REPLAY_BATCH = 100

REQUEST_FIELDS = (
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
    "rate_key",
    "breaker_key",
    "owner",
    "labels",
)
_REQUEST_FIELD_SET = frozenset(REQUEST_FIELDS)  # checked once per request of a bulk enqueue


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
    rate_key: str | None = None  # its handler's and queue's rates count each key apart
    breaker_key: str | None = None  # its handler's breaker trips per key
    owner: str | None = None  # who it belongs to (a team)
    labels: Mapping[str, str] | None = None  # free-form key/value strings

    @classmethod
    def coerce(cls, value: RunRequest | Mapping[str, Any]) -> RunRequest:
        if isinstance(value, RunRequest):
            return value
        if not isinstance(value, Mapping):
            raise InvalidArgument(
                "run request", value, "a rota.RunRequest or a dict with a 'handler' key"
            )
        if not value.keys() <= _REQUEST_FIELD_SET or "handler" not in value:
            allowed = f"a dict with keys from {REQUEST_FIELDS}"
            raise InvalidArgument("run request", dict(value), allowed)
        return cls(**value)


def new_run(
    registry: Registry,
    request: RunRequest,
    now: datetime | None = None,
    correlation_id: str | None = None,
) -> NewRun:
    """The run ``request`` asks for, with what it leaves out taken from its handler's
    registration (NewRun validates every value). ``now`` (the caller's clock) is only
    used to refuse a deadline that has already passed."""
    spec = registry.require(request.handler)
    if request.deadline is not None:
        check_deadline(request.deadline, now)
    key = request.concurrency_key or None
    if key is not None and key.startswith(OVERLAP_PREFIX):
        # The planner's own keys: a run carrying one would count as a slot run of that
        # job, and could make the job's next slots skip (ADR 0029).
        raise InvalidArgument(
            "concurrency_key", key, f"a key not starting with {OVERLAP_PREFIX!r} (reserved)"
        )
    if request.key_limit is not None and key is None:
        raise InvalidArgument("key_limit", request.key_limit, "to come with a concurrency_key")
    # A request's tags add to the handler's (checked first: a string is not a list).
    extra_tags = check_tags(request.tags) if request.tags is not None else ()
    return NewRun(
        handler=spec.name,
        payload_json=encode_json("payload", request.payload),
        queue=_default(request.queue, spec.queue),
        priority=_default(request.priority, spec.priority),
        run_at=request.run_at,
        max_attempts=_default(request.max_attempts, spec.max_attempts),
        timeout=_default(request.timeout, spec.timeout),
        idempotency_key=request.idempotency_key,
        tags=(*spec.tags, *extra_tags),
        concurrency_key=key,
        concurrency_limit=(request.key_limit or spec.key_limit) if key else None,
        deadline=request.deadline,
        correlation_id=correlation_id,
        rate_key=request.rate_key or None,
        breaker_key=request.breaker_key or None,
        owner=request.owner or None,
        labels=check_labels(request.labels),
    )


def check_deadline(deadline: object, now: datetime | None) -> None:
    """A run's deadline must be a valid instant after ``now`` (None: not compared)."""
    if now is not None and check_instant("deadline", deadline) <= now:
        raise InvalidArgument("deadline", deadline, f"an instant after now ({now.isoformat()})")


def _default(value: T | None, default: T) -> T:
    return default if value is None else value


async def enqueue(store: Store, clock: Clock, runs: Sequence[NewRun]) -> list[int]:
    return [run_id for run_id, _ in await producing.enqueue(store, runs, clock.db_now())]


async def enqueue_in(
    store: Store,
    clock: Clock,
    registry: Registry,
    namespace: str,
    request: RunRequest,
    correlation_id: str | None = None,
) -> int:
    """One run of a registered handler in ``namespace`` (the HTTP API's enqueue), its
    payload checked against the handler's type; a repeated idempotency key returns the
    run the first request made."""
    check_payload(registry, request.handler, request.payload)
    run = new_run(registry, request, clock.now(), correlation_id)
    [run_id] = await enqueue(store, clock, [dataclasses.replace(run, namespace=namespace)])
    return run_id


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


async def run_logs(
    store: Store, run_id: int, namespaces: Namespaces = None, after: int | None = None
) -> list[LogLine]:
    """The run's log lines (those after the seq ``after``, when given), in order."""
    await get_run(store, run_id, namespaces)
    return await store.logs(run_id, after)


MAX_LIBRARY_PAGE = 1000  # the library's listing reads more at once than the API's page


async def list_runs(
    store: Store,
    state: str | None = None,
    handler: str | None = None,
    queue: str | None = None,
    owner: str | None = None,
    labels: object = None,
    priority: int | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[Run]:
    """The library's listing (App.list_runs): newest first, through the RunSearch the
    API's listing makes, so the filters and their checks are the same; ``labels`` (a
    mapping) must all match."""
    search = RunSearch(
        states=(one_of("state", RunState, state),) if state is not None else (),
        handler=handler,
        queue=queue,
        owner=owner,
        labels=check_labels(labels),
        priority=priority,
        before_id=before_id,
        limit=limit,
    )
    check_search(search, max_limit=MAX_LIBRARY_PAGE)
    return await store.search_runs(search)


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
    if await store.workflow_step_of(run_id) is not None:
        # A step's replay takes its place in its workflow run (store/core/workflows.py).
        await get_run(store, run_id, namespaces)
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


def check_search(search: RunSearch, max_limit: int = MAX_PAGE) -> None:
    """Every value of a search is one the stores can compare with: bounded text
    without NUL, instants in range, ids that fit."""
    limit = search.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= max_limit:
        raise InvalidArgument("limit", limit, f"an integer 1-{max_limit}")
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
    check_owner(search.owner)
    check_labels(search.labels)
    if search.priority is not None:
        check_priority(search.priority)
