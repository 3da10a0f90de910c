"""Jobs: a handler + payload + run options + an optional schedule.

A job with a trigger (cron, interval, once) is a schedule: the planner turns its slots
into runs. A job without one is manual: it runs when triggered. Pure values; the store
keeps them, the planner reads them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from rota.domain.labels import Labels, check_labels, check_owner
from rota.domain.misfire import MisfirePolicy, OverlapPolicy
from rota.domain.overlap import overlap_key
from rota.domain.parameters import apply as apply_parameters
from rota.domain.parameters import check_schema
from rota.domain.runs import (
    MAX_SECONDS,
    NewRun,
    check_name,
    check_positive_int,
    check_priority,
    check_timeout,
)
from rota.domain.states import RunState
from rota.domain.triggers import (
    CronTrigger,
    IntervalTrigger,
    OnceTrigger,
    Trigger,
    describe,
    fire_times,
)
from rota.domain.values import (
    check_instant,
    check_json_text,
    check_text,
    one_of,
    require_aware,
    storable_text,
)
from rota.errors import InvalidArgument


class TriggerKind(StrEnum):
    CRON = "cron"
    INTERVAL = "interval"
    ONCE = "once"
    MANUAL = "manual"


MAX_RUN_ALL_CAP = 10_000
MAX_JITTER = 24 * 3600
MAX_CRON_LENGTH = 200
MAX_TIMEZONE_LENGTH = 64


def _seconds(name: str, value: object, minimum: float = 0.0, maximum: float = MAX_SECONDS) -> float:
    # ``not minimum <= value <= maximum`` also refuses NaN.
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not minimum <= value <= maximum
    ):
        most = f" and <= {maximum:g}" if maximum < float("inf") else ""
        raise InvalidArgument(name, value, f"a number of seconds >= {minimum:g}{most}")
    return float(value)


@dataclass(frozen=True)
class JobSpec:
    """What a user defines. Validated on construction: a bad cron expression, an unknown
    time zone or a schedule that can never fire is refused here, before any write."""

    name: str
    handler: str
    payload_json: str = "null"
    queue: str = "default"
    priority: int = 5
    max_attempts: int = 3
    timeout: float | None = None
    kind: TriggerKind = TriggerKind.MANUAL
    cron: str | None = None
    timezone: str = "UTC"
    interval_seconds: float | None = None
    anchor: datetime | None = None  # interval start; the job's creation time if None
    at: datetime | None = None
    misfire: MisfirePolicy = MisfirePolicy.FIRE_NOW
    catch_up_window_seconds: float = 3600.0
    run_all_cap: int = 100
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    jitter_seconds: float = 0.0
    namespace: str = "default"
    # A template's parameters: a JSON Schema of the payload, with defaults
    # (rota.domain.parameters). The job's own payload and every trigger's must fit it.
    parameters: Mapping[str, Any] | None = None
    owner: str | None = None  # its runs' owner and labels (rota.domain.labels)
    labels: Labels = ()

    def __post_init__(self) -> None:
        check_name("job name", self.name)
        check_owner(self.owner)
        object.__setattr__(self, "labels", check_labels(self.labels))
        check_name("handler", self.handler)
        check_name("queue", self.queue)
        check_name("namespace", self.namespace)
        check_priority(self.priority)
        check_positive_int("max_attempts", self.max_attempts)
        check_timeout(self.timeout)
        check_positive_int("run_all_cap", self.run_all_cap)
        _seconds("catch_up_window", self.catch_up_window_seconds)
        _seconds("jitter", self.jitter_seconds)
        object.__setattr__(self, "misfire", one_of("misfire", MisfirePolicy, self.misfire))
        object.__setattr__(self, "overlap", one_of("overlap", OverlapPolicy, self.overlap))
        object.__setattr__(self, "kind", one_of("trigger kind", TriggerKind, self.kind))
        self._check_trigger_fields()
        if self.parameters is not None:
            object.__setattr__(self, "parameters", check_schema(self.parameters))
            apply_parameters(self.parameters, json.loads(self.payload_json))
        try:
            self.trigger(datetime(2000, 1, 1, tzinfo=UTC))  # parses and validates
        except OverflowError:
            raise InvalidArgument("interval", self.interval_seconds, "a shorter interval") from None

    def check_storable(self) -> None:
        """The limits a job must meet to be saved (see rota.domain.values): text every
        store holds, instants in range, durations and caps that keep the planner's
        arithmetic in range. Checked when a job is written, not when one is read, so
        a job saved before a limit existed can still be read, shown and fixed."""
        check_json_text("payload", self.payload_json)
        check_positive_int("run_all_cap", self.run_all_cap, MAX_RUN_ALL_CAP)
        _seconds("catch_up_window", self.catch_up_window_seconds, maximum=MAX_SECONDS)
        _seconds("jitter", self.jitter_seconds, maximum=MAX_JITTER)
        check_text("time zone", self.timezone, MAX_TIMEZONE_LENGTH)
        if self.cron is not None:
            check_text("cron expression", self.cron, MAX_CRON_LENGTH)
        if self.interval_seconds is not None:
            _seconds("interval", self.interval_seconds, minimum=0.001, maximum=MAX_SECONDS)
        for name in _INSTANTS:
            instant = getattr(self, name)
            if instant is not None:
                check_instant(name, instant)

    def _check_trigger_fields(self) -> None:
        given = {
            TriggerKind.CRON: self.cron is not None,
            TriggerKind.INTERVAL: self.interval_seconds is not None,
            TriggerKind.ONCE: self.at is not None,
        }
        extra = [kind.value for kind, present in given.items() if present and kind != self.kind]
        if extra or (self.kind != TriggerKind.MANUAL and not given[self.kind]):
            raise InvalidArgument(
                "schedule",
                {"cron": self.cron, "interval": self.interval_seconds, "at": self.at},
                "exactly one of cron=, interval= or at= (or none, for a manual job)",
            )
        if self.kind is TriggerKind.INTERVAL:
            _seconds("interval", self.interval_seconds, minimum=0.001)
        if self.at is not None:
            require_aware(self.at, "at")
        if self.anchor is not None:
            require_aware(self.anchor, "anchor")

    def trigger(self, created_at: datetime) -> Trigger | None:
        if self.kind is TriggerKind.CRON:
            assert self.cron is not None
            return CronTrigger(self.cron, self.timezone)
        if self.kind is TriggerKind.INTERVAL:
            assert self.interval_seconds is not None
            return IntervalTrigger(
                timedelta(seconds=self.interval_seconds), self.anchor or created_at
            )
        if self.kind is TriggerKind.ONCE:
            assert self.at is not None
            return OnceTrigger(self.at)
        return None

    @property
    def catch_up_window(self) -> timedelta:
        return timedelta(seconds=self.catch_up_window_seconds)

    def schedule_text(self, created_at: datetime) -> str:
        trigger = self.trigger(created_at)
        return describe(trigger) if trigger else "manual"


@dataclass(frozen=True)
class Job:
    """A stored job. ``cursor``: every slot at or before it has been decided (planned
    or skipped); ``next_fire_at``: the next slot after the cursor, None if none."""

    id: int
    spec: JobSpec
    paused: bool
    cursor: datetime
    next_fire_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # Set when the planner last failed to plan this job (see PlanningFailure); cleared
    # when planning next succeeds, or the job is updated or resumed.
    planning_error: str | None = None
    planning_failed_at: datetime | None = None
    planning_failures: int = 0  # in a row
    planning_retry_at: datetime | None = None

    @property
    def trigger(self) -> Trigger | None:
        return self.spec.trigger(self.created_at)


@dataclass(frozen=True)
class UnreadableJob:
    """A stored job whose definition this rota cannot read (written by another
    version, or edited by hand). The planner sets it aside with ``error``; it never
    stops the planning of other jobs."""

    id: int
    namespace: str
    name: str
    planning_failures: int
    error: str


PLANNING_RETRY_FIRST = timedelta(minutes=1)
PLANNING_RETRY_MAX = timedelta(hours=1)
MAX_PLANNING_ERROR = 500


def planning_retry_delay(failures: int) -> timedelta:
    """How long a job whose planning failed ``failures`` times in a row waits before
    the planner tries it again: 1, 2, 4, ... minutes, at most an hour. Most such
    failures do not heal by themselves; updating or resuming the job retries at once."""
    exponent = min(max(failures, 1) - 1, 10)
    delay: timedelta = PLANNING_RETRY_FIRST * (2**exponent)
    return min(delay, PLANNING_RETRY_MAX)


def planning_error_text(exc: BaseException) -> str:
    """What is recorded and shown for a planning failure: the error's kind and first
    line, bounded, storable. A driver's DETAIL and CONTEXT lines (which may quote the
    data, i.e. a payload) are left out."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    text = f"{type(exc).__name__}: {first_line}"[:MAX_PLANNING_ERROR]
    return storable_text(text)


_INSTANTS = ("anchor", "at")


def spec_to_json(spec: JobSpec) -> str:
    data = asdict(spec)
    for key in _INSTANTS:
        if data[key] is not None:
            data[key] = data[key].isoformat()
    data["labels"] = dict(spec.labels)
    return json.dumps(data)


# What a stored spec may hold; a key from an older or newer rota is left out.
_SPEC_FIELDS = frozenset(f.name for f in fields(JobSpec))


def spec_from_json(text: str | dict[str, object]) -> JobSpec:
    stored: Mapping[str, Any] = json.loads(text) if isinstance(text, str) else text
    data = {k: v for k, v in stored.items() if k in _SPEC_FIELDS}
    for key in _INSTANTS:
        if isinstance(data.get(key), str):
            data[key] = datetime.fromisoformat(str(data[key]))
    return JobSpec(**data)


def trigger_fields(spec: JobSpec) -> tuple[object, ...]:
    """What decides the slots; when it changes, planning restarts from now."""
    return (spec.kind, spec.cron, spec.timezone, spec.interval_seconds, spec.anchor, spec.at)


@dataclass(frozen=True)
class JobAdvance:
    """One job's planning decision: move the cursor from ``expected_cursor`` to
    ``cursor`` and create ``runs``, or do nothing if the cursor moved meanwhile."""

    job_id: int
    expected_cursor: datetime
    cursor: datetime
    next_fire_at: datetime | None
    runs: tuple[NewRun, ...]


@dataclass(frozen=True)
class RecentStart:
    """A slot of a job, its run and when the run started (the claim of its latest
    attempt); ``started_at`` is None while it waits, or when it was skipped. A slot
    with no run at all (``run_id`` None) was missed: a misfire policy let it go while
    no leader planned (see :func:`with_missed_slots`)."""

    slot_at: datetime
    started_at: datetime | None
    run_id: int | None = None
    state: RunState | None = None
    reason: str | None = None  # why it ended as it did (a skipped slot's reason)

    @property
    def delay_seconds(self) -> float | None:
        """Slot to start, in seconds: how late the run started."""
        if self.started_at is None:
            return None
        return (self.started_at - self.slot_at).total_seconds()

    @property
    def outcome(self) -> str:
        """What became of the slot: its run's state, or "missed"."""
        return "missed" if self.state is None else self.state.value


def with_missed_slots(
    trigger: Trigger | None, starts: list[RecentStart], since: datetime, limit: int
) -> list[RecentStart]:
    """``starts`` (oldest first) with the slots missed between them: fire instants of
    ``trigger`` after ``since`` (the job's last change: older slots followed another
    trigger, or a pause) that lie between two planned slots and have no run. A slot
    after the newest planned one is not missed yet, only not planned. The newest
    ``limit`` slots."""
    if trigger is None or len(starts) < 2:
        return starts[-limit:]
    planned = {start.slot_at for start in starts}
    first = max(starts[0].slot_at, since)
    between = fire_times(trigger, first, starts[-1].slot_at, limit + len(starts))
    missed = [RecentStart(slot, None) for slot in between if slot not in planned]
    return sorted([*starts, *missed], key=lambda start: start.slot_at)[-limit:]


def slot_run(job: Job, slot: datetime, run_at: datetime) -> NewRun:
    """The run for one slot. Its idempotency key is derived from (job, slot), so a slot
    can become one run however many planners insert it. A job whose overlap policy is
    not ``allow`` gives it the job's overlap key, limit one: the claim decides the
    overlap when the run falls due (rota.domain.overlap)."""
    spec = job.spec
    key = overlap_key(spec.overlap, job.id)
    return NewRun(
        handler=spec.handler,
        payload_json=spec.payload_json,
        queue=spec.queue,
        priority=spec.priority,
        run_at=run_at,
        max_attempts=spec.max_attempts,
        timeout=spec.timeout,
        idempotency_key=f"rota:job:{job.id}:{slot.isoformat()}",
        namespace=spec.namespace,
        job_id=job.id,
        slot_at=slot,
        concurrency_key=key,
        concurrency_limit=None if key is None else 1,
        owner=spec.owner,
        labels=spec.labels,
    )


def manual_run(
    job: Job,
    payload_json: str | None,
    idempotency_key: str | None,
    correlation_id: str | None = None,
) -> NewRun:
    spec = job.spec
    return NewRun(
        handler=spec.handler,
        payload_json=payload_json if payload_json is not None else spec.payload_json,
        queue=spec.queue,
        priority=spec.priority,
        max_attempts=spec.max_attempts,
        timeout=spec.timeout,
        idempotency_key=idempotency_key,
        namespace=spec.namespace,
        job_id=job.id,
        correlation_id=correlation_id,
        owner=spec.owner,
        labels=spec.labels,
    )
