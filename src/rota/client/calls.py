"""Every API call of the HTTP client, written once, with no I/O.

A call is a generator: it yields a :class:`Request` (or a :class:`Pause` while it polls),
is sent back the decoded JSON body, and returns its result. The sync and the async client
(``rota.client.doors``) only drive these generators over httpx, so the two clients cannot
drift apart: there is one implementation of each call and of each check of its input.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from rota.errors import InvalidArgument, RotaError

if TYPE_CHECKING:
    from typing_extensions import Unpack  # annotations only: no runtime dependency

T = TypeVar("T")
JsonObject = dict[str, Any]

# The states a run does not leave (rota.domain.states.TERMINAL_STATES, as the API's
# strings; kept here so the client needs nothing but httpx).
FINISHED = frozenset({"succeeded", "failed", "timed_out", "cancelled", "dead_lettered", "skipped"})


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Safe to send again after a dropped connection or a 502/503/504: reads, and writes
    # that carry an Idempotency-Key or are idempotent by definition.
    retryable: bool = False


@dataclass(frozen=True)
class Pause:
    seconds: float


Step = Request | Pause
Call = Generator[Step, Any, T]


class RunNotFinished(RotaError, TimeoutError):
    """``wait_for`` gave up: the run had not finished within the timeout."""

    def __init__(self, run_id: int, state: str, timeout: float) -> None:
        self.run_id, self.state, self.timeout = run_id, state, timeout
        super().__init__(f"run {run_id} is still {state} after {timeout:g} s")


def check_timeout(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidArgument(name, value, "a positive number of seconds")
    return float(value)


def check_json(name: str, value: Any) -> Any:
    """Refuse what JSON cannot carry before anything is sent (the message names the
    field, never the value: payloads may hold secrets)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(name, "<not shown>", f"a JSON value ({exc})") from None
    return value


def _instant(name: str, value: datetime | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidArgument(name, value, "an aware datetime (with a time zone)")
    return value.isoformat()


def _query(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None and value != []}


# -- jobs -------------------------------------------------------------------------------
def list_jobs(
    namespace: str | None = None,
    *,
    owner: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Call[list[JsonObject]]:
    """Every job you can see, by namespace and name; with ``owner`` and ``labels``
    (every one must match), only those."""
    params = _query(
        namespace=namespace,
        owner=owner,
        label=[f"{key}={value}" for key, value in (labels or {}).items()],
    )
    page = yield Request("GET", "/api/v1/jobs", params, retryable=True)
    return list(page["items"])


def get_job(name: str, namespace: str = "default") -> Call[JsonObject]:
    job = yield Request("GET", f"/api/v1/jobs/{name}", _query(namespace=namespace), retryable=True)
    return dict(job)


def create_job(job: Mapping[str, Any]) -> Call[JsonObject]:
    created = yield Request("POST", "/api/v1/jobs", body=check_json("job", dict(job)))
    return dict(created)


def update_job(
    name: str, changes: Mapping[str, Any], namespace: str = "default"
) -> Call[JsonObject]:
    job = yield Request(
        "PATCH",
        f"/api/v1/jobs/{name}",
        _query(namespace=namespace),
        body=check_json("changes", dict(changes)),
        retryable=True,  # applying the same changes twice leaves the same job
    )
    return dict(job)


def delete_job(name: str, namespace: str = "default") -> Call[None]:
    yield Request("DELETE", f"/api/v1/jobs/{name}", _query(namespace=namespace))
    return None


def set_paused(name: str, paused: bool, namespace: str = "default") -> Call[JsonObject]:
    verb = "pause" if paused else "resume"
    job = yield Request(
        "POST", f"/api/v1/jobs/{name}/{verb}", _query(namespace=namespace), retryable=True
    )
    return dict(job)


def pause_job(name: str, namespace: str = "default") -> Call[JsonObject]:
    return (yield from set_paused(name, True, namespace))


def resume_job(name: str, namespace: str = "default") -> Call[JsonObject]:
    return (yield from set_paused(name, False, namespace))


def trigger(
    name: str,
    payload: Any = None,
    *,
    namespace: str = "default",
    idempotency_key: str | None = None,
) -> Call[int]:
    """Run a job now; returns the run's id. Retried safely: a key is made up when none
    is given, so a retry after a dropped connection cannot start the job twice."""
    body = {"payload": check_json("payload", payload)} if payload is not None else None
    answer = yield Request(
        "POST",
        f"/api/v1/jobs/{name}/trigger",
        _query(namespace=namespace),
        body=body,
        headers={"Idempotency-Key": idempotency_key or _new_key()},
        retryable=True,
    )
    return int(answer["run_id"])


# -- runs -------------------------------------------------------------------------------
def enqueue(
    handler: str,
    payload: Any = None,
    *,
    namespace: str = "default",
    queue: str | None = None,
    priority: int | None = None,
    run_at: datetime | None = None,
    max_attempts: int | None = None,
    timeout: float | None = None,
    tags: Sequence[str] | None = None,
    concurrency_key: str | None = None,
    key_limit: int | None = None,
    deadline: datetime | None = None,
    idempotency_key: str | None = None,
    owner: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Call[int]:
    """One run of a handler the server knows; returns its id (the first run's id again
    for a repeated ``idempotency_key``; one is made up when none is given)."""
    if timeout is not None:
        check_timeout("timeout", timeout)
    body = _query(
        handler=handler,
        payload=check_json("payload", payload),
        queue=queue,
        priority=priority,
        run_at=_instant("run_at", run_at),
        max_attempts=max_attempts,
        timeout_seconds=timeout,
        tags=list(tags) if tags is not None else None,
        concurrency_key=concurrency_key,
        key_limit=key_limit,
        deadline=_instant("deadline", deadline),
        owner=owner,
        labels=dict(labels) if labels is not None else None,
    )
    answer = yield Request(
        "POST",
        "/api/v1/runs",
        _query(namespace=namespace),
        body=body,
        headers={"Idempotency-Key": idempotency_key or _new_key()},
        retryable=True,
    )
    return int(answer["run_id"])


class RunFilters(TypedDict, total=False):
    """What runs can be filtered by (the API's query parameters), the same for the
    listing, the dead-letter queue and a bulk action (rota.client.bulk_calls)."""

    namespace: str | None
    handler: str | None
    queue: str | None
    tag: str | None
    job: str | None
    created_after: datetime | None
    created_before: datetime | None
    q: str | None
    owner: str | None
    labels: Mapping[str, str] | None  # every one must match (sent as label=key=value)
    priority: int | None


class RunPageFilters(RunFilters, total=False):
    """A listing's filters and its page."""

    limit: int | None
    cursor: str | None


def run_query(state: Sequence[str] | str | None, filters: Mapping[str, Any]) -> dict[str, Any]:
    """The query parameters of a run filter (RunFilters, and a page's if given)."""
    params = dict(filters)
    labels = params.pop("labels", None) or {}
    params["label"] = [f"{key}={value}" for key, value in labels.items()]
    for name in ("created_after", "created_before"):
        params[name] = _instant(name, params.get(name))
    states = [state] if isinstance(state, str) else list(state or [])
    return _query(state=states, **params)


def list_runs(
    *, state: Sequence[str] | str | None = None, **filters: Unpack[RunPageFilters]
) -> Call[JsonObject]:
    """One page of runs, newest first: ``{"items": [...], "next_cursor": ...}``."""
    page = yield Request("GET", "/api/v1/runs", run_query(state, filters), retryable=True)
    return dict(page)


def list_dead(**filters: Unpack[RunPageFilters]) -> Call[JsonObject]:
    """One page of dead-lettered runs, newest first."""
    page = yield Request("GET", "/api/v1/dlq", run_query(None, filters), retryable=True)
    return dict(page)


def get_run(run_id: int) -> Call[JsonObject]:
    """``{"run": {...}, "attempts": [...]}``."""
    detail = yield Request("GET", f"/api/v1/runs/{run_id}", retryable=True)
    return dict(detail)


def list_workflow_runs(
    name: str | None = None, limit: int = 50, namespace: str | None = None
) -> Call[list[JsonObject]]:
    """The newest workflow runs, newest first."""
    params: dict[str, Any] = {"limit": limit, **_query(name=name, namespace=namespace)}
    found = yield Request("GET", "/api/v1/workflow-runs", params=params, retryable=True)
    return list(found["items"])


def get_workflow_run(workflow_run_id: int) -> Call[JsonObject]:
    """A workflow run: state, duration and steps."""
    found = yield Request("GET", f"/api/v1/workflow-runs/{workflow_run_id}", retryable=True)
    return dict(found)


def workflow_run_graph(workflow_run_id: int) -> Call[JsonObject]:
    """``{"nodes": [...], "edges": [{"from": ..., "to": ...}], ...}``."""
    path = f"/api/v1/workflow-runs/{workflow_run_id}/graph"
    graph = yield Request("GET", path, retryable=True)
    return dict(graph)


def cancel_workflow_run(workflow_run_id: int) -> Call[JsonObject]:
    cancelled = yield Request("POST", f"/api/v1/workflow-runs/{workflow_run_id}/cancel")
    return dict(cancelled)


def run_logs(run_id: int, after: int | None = None) -> Call[list[JsonObject]]:
    """The run's log lines in order; with ``after``, those whose ``seq`` is greater
    (pass the last ``seq`` seen to tail a running attempt's log)."""
    params: dict[str, Any] = {} if after is None else {"after": after}
    logs = yield Request("GET", f"/api/v1/runs/{run_id}/logs", params=params, retryable=True)
    return list(logs["lines"])


def cancel_run(run_id: int) -> Call[JsonObject]:
    run = yield Request("POST", f"/api/v1/runs/{run_id}/cancel", retryable=True)
    return dict(run)


def requeue_run(run_id: int) -> Call[int]:
    # Asking twice returns the same new run, so a retry is safe.
    answer = yield Request("POST", f"/api/v1/runs/{run_id}/requeue", retryable=True)
    return int(answer["new_run_id"])


def replay_dead(run_ids: Sequence[int]) -> Call[list[JsonObject]]:
    """Replay dead-lettered runs; one result per id (``new_run_id`` or ``error``)."""
    ids = list(run_ids)
    if not ids:
        raise InvalidArgument("run_ids", ids, "at least one run id")
    if len(ids) == 1:
        answer = yield Request("POST", f"/api/v1/dlq/{ids[0]}/replay", retryable=True)
        return [{"run_id": ids[0], "new_run_id": answer["new_run_id"], "error": None}]
    answer = yield Request("POST", "/api/v1/dlq/replay", body={"run_ids": ids}, retryable=True)
    return list(answer["results"])


def wait_for(run_id: int, timeout: float = 60.0, poll: float = 0.2) -> Call[JsonObject]:
    """Poll until the run has finished; returns the run. Raises RunNotFinished after
    ``timeout`` seconds."""
    timeout = check_timeout("timeout", timeout)
    poll = check_timeout("poll", poll)
    deadline = time.monotonic() + timeout
    while True:
        detail = yield from get_run(run_id)
        run: JsonObject = detail["run"]
        if run["state"] in FINISHED:
            return run
        left = deadline - time.monotonic()
        if left <= 0:
            raise RunNotFinished(run_id, run["state"], timeout)
        yield Pause(min(poll, left))


# -- cluster ----------------------------------------------------------------------------
def list_workers() -> Call[list[JsonObject]]:
    page = yield Request("GET", "/api/v1/workers", retryable=True)
    return list(page["items"])


def drain_worker(node_id: str) -> Call[JsonObject]:
    worker = yield Request("POST", f"/api/v1/workers/{node_id}/drain", retryable=True)
    return dict(worker)


def resume_worker(node_id: str) -> Call[JsonObject]:
    worker = yield Request("POST", f"/api/v1/workers/{node_id}/resume", retryable=True)
    return dict(worker)


def leader() -> Call[JsonObject | None]:
    """The leader's lease (holder, term, since, expires_at), or None if none holds it."""
    answer = yield Request("GET", "/api/v1/leader", retryable=True)
    return answer["leader"]  # type: ignore[no-any-return]


def dev_token(**request: Any) -> Call[JsonObject]:
    """A token from a development server's /dev/token (404 on a production server)."""
    answer = yield Request("POST", "/dev/token", body=request)
    return dict(answer)


def _new_key() -> str:
    import uuid

    return f"client-{uuid.uuid4()}"
