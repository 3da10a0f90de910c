"""The values that cross the store port: what to enqueue, what a claim hands out, what
a worker reports back. Frozen, validated at construction, no I/O."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, overload

from rota.domain.labels import Labels, check_labels, check_owner
from rota.domain.states import REPLAYABLE_STATES, AttemptOutcome, RunState
from rota.domain.values import (
    MAX_INT32,
    check_instant,
    check_json_text,
    check_text,
    encode_json,
    storable_json_text,
    storable_text,
)
from rota.errors import InvalidArgument, InvalidTransition, RunNotFound

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
NAME_RULE = "1-128 characters: letters, digits and _ . : - (starting with a letter or digit)"
MIN_PRIORITY, MAX_PRIORITY = 1, 10
MAX_IDEMPOTENCY_KEY = 255
# Run timeouts (and the API's other durations) stay below ten years: lease and deadline
# arithmetic on them must not leave the instants every store holds.
MAX_SECONDS = 10 * 365 * 24 * 3600
MAX_TRACE_CONTEXT = 512  # a traceparent is 55 characters; room for a tracestate
__all__ = ["encode_json"]  # re-exported: callers import it from here


def check_name(kind: str, value: object) -> str:
    # fullmatch: with match, the pattern's $ would let a trailing newline through.
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        raise InvalidArgument(kind, value, NAME_RULE)
    return value


def check_priority(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument("priority", value, f"an integer {MIN_PRIORITY}-{MAX_PRIORITY}")
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise InvalidArgument("priority", value, f"an integer {MIN_PRIORITY}-{MAX_PRIORITY}")
    return value


def check_positive_int(name: str, value: object, maximum: int = MAX_INT32) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidArgument(name, value, f"an integer >= 1 and <= {maximum}")
    return value


def check_tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise InvalidArgument("tags", value, f"a list of tag names ({NAME_RULE})")
    for tag in value:
        check_name("tag", tag)
    return tuple(sorted(set(value)))


def check_timeout(value: object) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= MAX_SECONDS
    ):
        raise InvalidArgument(
            "timeout", value, f"a number of seconds > 0 and <= {MAX_SECONDS}, or None"
        )
    return float(value)


def check_idempotency_key(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_IDEMPOTENCY_KEY:
        raise InvalidArgument(
            "idempotency_key", value, f"a string of 1-{MAX_IDEMPOTENCY_KEY} characters"
        )
    return check_text("idempotency_key", value)


# typed: 1, 1.0 and True are told apart (True is no priority, 2.0 no max_attempts).
@functools.lru_cache(maxsize=256, typed=True)
def _checked_shape(
    handler: object,
    queue: object,
    namespace: object,
    priority: object,
    max_attempts: object,
    timeout: object,
    tags: object,
    concurrency_key: object,
    concurrency_limit: object,
    rate_key: object,
    breaker_key: object,
) -> tuple[float | None, tuple[str, ...]]:
    """The checks of a run's handler, queue and options (all but its own values): the
    timeout and tags in their one form, or InvalidArgument (never remembered)."""
    for kind, name in (("handler", handler), ("queue", queue), ("namespace", namespace)):
        check_name(kind, name)
    check_priority(priority)
    check_positive_int("max_attempts", max_attempts)
    if concurrency_key is not None:
        check_name("concurrency_key", concurrency_key)
    if concurrency_limit is not None:
        check_positive_int("key_limit", concurrency_limit)
    for key_field, key in (("rate_key", rate_key), ("breaker_key", breaker_key)):
        if key is not None:
            check_name(key_field, key)
    return check_timeout(timeout), check_tags(tags)


@dataclass(frozen=True)
class NewRun:
    """A run to create. ``payload_json`` is already-encoded JSON text."""

    handler: str
    payload_json: str
    queue: str = "default"
    priority: int = 5
    run_at: datetime | None = None  # None: now, by the store's clock
    max_attempts: int = 3
    timeout: float | None = None
    idempotency_key: str | None = None
    namespace: str = "default"
    replay_of: int | None = None
    job_id: int | None = None  # the job (schedule) this run was made for
    slot_at: datetime | None = None  # the schedule slot it fills
    tags: tuple[str, ...] = ()  # only a worker with every one of these may claim it
    concurrency_key: str | None = None  # runs sharing a key share concurrency_limit
    concurrency_limit: int | None = None
    deadline: datetime | None = None  # start by then, or be cancelled (deadline_exceeded)
    correlation_id: str | None = None  # the request that created it (X-Correlation-ID)
    # The W3C trace context (a traceparent) active when it was enqueued, if tracing is on.
    trace_context: str | None = None
    rate_key: str | None = None  # its handler's and queue's rates count each key apart
    breaker_key: str | None = None  # its handler's breaker trips per key (e.g. a host)
    owner: str | None = None  # who it belongs to (a team): shown and filtered on
    labels: Labels = ()  # free-form (key, value) pairs, sorted by key (domain/labels.py)

    def __post_init__(self) -> None:
        """Everything a store will be asked to hold is checked here, so the SQLite and
        PostgreSQL stores take and refuse the same runs (and no run reaches a store
        that would fail the whole batch it travels in). Values are kept in one form:
        instants in UTC, the timeout as a float, tags sorted without repeats."""
        shape = (
            self.handler,
            self.queue,
            self.namespace,
            self.priority,
            self.max_attempts,
            self.timeout,
            self.tags,
            self.concurrency_key,
            self.concurrency_limit,
            self.rate_key,
            self.breaker_key,
        )
        # The runs of a bulk enqueue share their shape: it is checked once (a tuple of
        # tags can be remembered, a list cannot).
        check = _checked_shape if isinstance(self.tags, tuple) else _checked_shape.__wrapped__
        timeout, tags = check(*shape)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "tags", tags)
        check_json_text("payload", self.payload_json)
        check_idempotency_key(self.idempotency_key)
        for field_name in ("run_at", "slot_at", "deadline"):
            instant = getattr(self, field_name)
            if instant is not None:
                object.__setattr__(self, field_name, check_instant(field_name, instant))
        if self.correlation_id is not None:
            check_text("correlation_id", self.correlation_id, max_length=200)
        if self.trace_context is not None:
            check_text("trace_context", self.trace_context, max_length=MAX_TRACE_CONTEXT)
        check_owner(self.owner)
        object.__setattr__(self, "labels", check_labels(self.labels))

    def sibling(
        self,
        payload: Any,
        idempotency_key: str | None = None,
        run_at: datetime | None = None,
        deadline: datetime | None = None,
    ) -> NewRun:
        """A run of this run's shape (handler, queue, options: checked when this one was
        made) with its own payload, idempotency key, run_at and deadline, each checked
        here. A bulk enqueue makes its 20,000 runs this way, checking what they share
        once instead of 20,000 times; the result equals what the constructor makes."""
        run = object.__new__(NewRun)
        values = run.__dict__
        values.update(self.__dict__)
        # encode_json refuses what check_json_text would (ensure_ascii escapes NUL and
        # every surrogate, which _suspect then looks at): no second check of the text.
        values["payload_json"] = encode_json("payload", payload)
        values["idempotency_key"] = check_idempotency_key(idempotency_key)
        values["run_at"] = None if run_at is None else check_instant("run_at", run_at)
        values["deadline"] = None if deadline is None else check_instant("deadline", deadline)
        return run


RUN_BATCH_CHUNK = 1000  # runs made at a time when a RunBatch is iterated


class RunBatch(Sequence[NewRun]):
    """The runs of a bulk enqueue, each made (and checked) when it is first read.

    PostgreSQL's COPY reads them a chunk at a time while the server stores the chunk
    before, so the caller's checking and the server's writing overlap instead of
    following each other (ADR 0039). Every run is still checked before anything is
    committed: a COPY is one statement, and a run refused inside it aborts it whole.
    A refusal is kept and raised again on every later read: a batch never looks
    shorter than it is."""

    def __init__(self, made: Iterator[NewRun], count: int, unkeyed: Callable[[], bool]):
        self._made = made
        self._count = count
        self._unkeyed = unkeyed
        self._runs: list[NewRun] = []
        self._refused: Exception | None = None

    def unkeyed(self) -> bool:
        """Whether no run has an idempotency key, answered without making the runs."""
        return self._unkeyed()

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> NewRun: ...
    @overload
    def __getitem__(self, index: slice) -> list[NewRun]: ...
    def __getitem__(self, index: int | slice) -> NewRun | list[NewRun]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            self.make_until(stop if step > 0 else start + 1)
        else:
            self.make_until(self._count if index < 0 else index + 1)
        return self._runs[index]

    def __iter__(self) -> Iterator[NewRun]:
        for start in range(0, self._count, RUN_BATCH_CHUNK):
            end = min(start + RUN_BATCH_CHUNK, self._count)
            self.make_until(end)
            yield from self._runs[start:end]

    def make_until(self, count: int) -> None:
        """Make (and check) the first ``count`` runs now, if they are not made yet."""
        if self._refused is not None:
            raise self._refused
        try:
            self._runs.extend(itertools.islice(self._made, max(count - len(self._runs), 0)))
        except Exception as refused:
            self._refused = refused
            raise


def unkeyed(runs: Sequence[NewRun]) -> bool:
    """Whether no run of ``runs`` has an idempotency key (a RunBatch answers from its
    requests, without making a run)."""
    if isinstance(runs, RunBatch):
        return runs.unkeyed()
    return all(run.idempotency_key is None for run in runs)


class Enqueued(NamedTuple):
    # A tuple: a bulk enqueue makes 20,000 of these, and a frozen dataclass's
    # __init__ costs several times a tuple's.
    run_id: int
    created: bool  # False when an idempotency key matched an existing run


@dataclass(frozen=True)
class ClaimedRun:
    """What a claim hands a worker. ``fence`` guards every write the worker makes."""

    run_id: int
    handler: str
    payload: Any
    queue: str
    attempt: int
    max_attempts: int
    fence: int
    timeout: float | None
    lost_count: int
    idempotency_key: str | None
    lease_expires_at: datetime
    correlation_id: str | None = None
    job_id: int | None = None
    # Seconds from falling due (run_at) to this claim, by the database clock.
    pickup_delay: float | None = None
    trace_context: str | None = None
    # A workflow step's input besides its payload: {"parents": ..., "workflow_payload": ...}.
    step_input: Any = None
    slot_at: datetime | None = None  # a schedule's slot: its start delay is measured from it


@dataclass(frozen=True)
class Lease:
    run_id: int
    fence: int


@dataclass(frozen=True)
class Outcome:
    """One attempt's result, written only if ``fence`` still matches.

    ``state`` is the run's next state, decided by the worker from the handler's policy
    (Succeeded, Retrying, Failed, TimedOut, Cancelled or DeadLettered).
    """

    run_id: int
    fence: int
    state: RunState
    attempt_outcome: AttemptOutcome
    result_json: str | None = None
    error: str | None = None
    # When state is Retrying: seconds from the database's now, so no worker clock decides.
    retry_delay: float | None = None
    # The run is a workflow step: its completion must release (or skip) the steps that
    # wait on it in the same transaction. Other completions need no transaction at all.
    workflow_step: bool = False

    def __post_init__(self) -> None:
        # The error is a handler's exception text: whatever it holds must not make the
        # write fail (on PostgreSQL a NUL would fail the whole batch of completions).
        if self.error is not None:
            object.__setattr__(self, "error", storable_text(self.error))


@dataclass(frozen=True)
class RenewResult:
    lost: frozenset[int]  # run ids whose lease is no longer ours (fence moved on)
    cancel_requested: frozenset[int]
    lease_expires_at: datetime | None


@dataclass(frozen=True)
class Attempt:
    run_id: int
    attempt: int
    fence: int
    worker_id: str | None
    started_at: datetime | None
    finished_at: datetime | None
    outcome: AttemptOutcome
    error: str | None

    @property
    def duration(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class Run:
    id: int
    namespace: str
    handler: str
    queue: str
    state: RunState
    payload: Any
    priority: int
    run_at: datetime
    attempt: int
    max_attempts: int
    fence: int
    timeout: float | None
    worker_id: str | None
    lease_expires_at: datetime | None
    idempotency_key: str | None
    result: Any
    error: str | None
    cancel_requested: bool
    lost_count: int
    replay_of: int | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    job_id: int | None = None
    slot_at: datetime | None = None
    tags: tuple[str, ...] = ()
    concurrency_key: str | None = None
    concurrency_limit: int | None = None
    deadline: datetime | None = None
    correlation_id: str | None = None
    trace_context: str | None = None
    owner: str | None = None
    labels: Labels = ()


# What one attempt may store through ctx.log (beyond it, lines are counted, not kept),
# and how many lines one read returns (ten attempts at the cap).
LOG_LINES_PER_ATTEMPT = 10_000
LOG_BYTES_PER_ATTEMPT = 1_048_576
LOG_READ_LIMIT = 100_000


@dataclass(frozen=True)
class LogLine:
    run_id: int
    attempt: int
    at: datetime
    level: str
    message: str
    fields_json: str = "{}"
    # Its place in the run's log, given by the store (None until stored): a reader
    # that has seen up to ``seq`` asks for the lines after it.
    seq: int | None = None

    def __post_init__(self) -> None:
        # What a handler logs is written as given, except what no store can hold.
        object.__setattr__(self, "message", storable_text(self.message))
        object.__setattr__(self, "fields_json", storable_json_text(self.fields_json))


@dataclass(frozen=True)
class ReapedRun:
    run_id: int
    fence: int
    state: RunState  # Pending again, or DeadLettered


@dataclass(frozen=True)
class RunFilter:
    state: RunState | None = None
    handler: str | None = None
    queue: str | None = None
    before_id: int | None = None  # keyset pagination: runs with id < before_id, newest first
    limit: int = 50


def replay_request(run_id: int, run: Run | None) -> NewRun:
    """A fresh run that repeats a finished one. Its idempotency key is derived from the
    old run, so replaying the same run twice (two operators, a retried request) yields
    one new run, not two."""
    if run is None:
        raise RunNotFound(run_id)
    if run.state not in REPLAYABLE_STATES:
        allowed = ", ".join(sorted(s.value for s in REPLAYABLE_STATES))
        raise InvalidTransition(run_id, run.state.value, f"replay (only {allowed} runs)")
    return NewRun(
        handler=run.handler,
        payload_json=encode_json("payload", run.payload),
        queue=run.queue,
        priority=run.priority,
        max_attempts=run.max_attempts,
        timeout=run.timeout,
        idempotency_key=f"rota:replay:{run.id}",
        namespace=run.namespace,
        replay_of=run.id,
        # A replay continues the trace of the run it repeats, so the two are linked.
        trace_context=run.trace_context,
        owner=run.owner,
        labels=run.labels,
    )
