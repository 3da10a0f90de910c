"""Use cases for jobs and their schedules, shared by the library, the CLI and the API."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from rota import payloads
from rota.clock import Clock
from rota.domain.jobs import (
    Job,
    JobSpec,
    RecentStart,
    TriggerKind,
    manual_run,
    trigger_fields,
    with_missed_slots,
)
from rota.domain.labels import check_labels, check_owner
from rota.domain.parameters import apply as apply_parameters
from rota.domain.parameters import check_schema
from rota.domain.runs import check_idempotency_key, check_name, check_positive_int, encode_json
from rota.domain.search import holds_labels
from rota.domain.triggers import CronTrigger, fire_times
from rota.domain.values import check_instant
from rota.errors import InvalidArgument, JobExists, JobNotFound, JobUnreadable
from rota.handlers import Registry
from rota.observe import producing
from rota.services.parameter_checks import off_loop
from rota.store.port import Store

MAX_PREVIEW = 1000


def job_spec(
    registry: Registry,
    name: str,
    handler: str,
    payload: Any = None,
    *,
    cron: str | None = None,
    interval: float | timedelta | None = None,
    at: datetime | None = None,
    timezone: str = "UTC",
    namespace: str = "default",
    parameters: Mapping[str, Any] | None = None,
    **options: Any,
) -> JobSpec:
    """Build a validated JobSpec; run options default from the handler's registration.
    ``parameters`` (a template's JSON Schema): the payload must fit it, and its
    defaults fill in what the payload leaves out."""
    spec = registry.require(handler)
    if parameters is not None:
        payload = apply_parameters(check_schema(parameters), payload)
    kind = _kind_of(cron, interval, at)
    if isinstance(interval, timedelta):
        interval = interval.total_seconds()
    defaults = {
        "queue": spec.queue,
        "priority": spec.priority,
        "max_attempts": spec.max_attempts,
        "timeout": spec.timeout,
    }
    renamed = {"catch_up_window": "catch_up_window_seconds", "jitter": "jitter_seconds"}
    explicit = {
        "name",
        "handler",
        "payload_json",
        "kind",
        "cron",
        "timezone",
        "interval_seconds",
        "at",
        "namespace",
        "parameters",
    }
    known = {f.name for f in dataclasses.fields(JobSpec)} - explicit | set(renamed)
    for key in options:
        if key not in known:
            raise InvalidArgument("schedule option", key, f"one of {', '.join(sorted(known))}")
    fields = {renamed.get(k, k): v for k, v in options.items() if v is not None}
    return JobSpec(
        name=name,
        handler=spec.name,
        payload_json=encode_json("payload", payload),
        kind=kind,
        cron=cron,
        timezone=timezone,
        interval_seconds=interval,
        at=at,
        namespace=namespace,
        parameters=parameters,
        **{**defaults, **fields},
    )


def _kind_of(cron: object, interval: object, at: object) -> TriggerKind:
    """The trigger kind the given schedule fields ask for (the JobSpec refuses two)."""
    if cron is not None:
        return TriggerKind.CRON
    if interval is not None:
        return TriggerKind.INTERVAL
    if at is not None:
        return TriggerKind.ONCE
    return TriggerKind.MANUAL


async def save_job(store: Store, clock: Clock, spec: JobSpec) -> Job:
    """Create or replace a job. Planning restarts from now when its trigger changed;
    otherwise it carries on from where it was."""
    spec.check_storable()
    now = await store.now(clock.db_now())
    try:
        existing = await store.get_job(spec.namespace, spec.name)
    except JobUnreadable:
        existing = None  # replacing a job this rota cannot read: plan it from now
    if spec.kind is TriggerKind.INTERVAL and spec.anchor is None:
        anchor = existing.spec.anchor if existing and existing.spec.anchor else now
        spec = dataclasses.replace(spec, anchor=anchor)
    if spec.kind is TriggerKind.ONCE and spec.at is not None and spec.at <= now:
        raise InvalidArgument("at", spec.at, f"an instant after now ({now.isoformat()})")
    if existing is not None and trigger_fields(existing.spec) == trigger_fields(spec):
        cursor = existing.cursor
    else:
        cursor = now
    trigger = spec.trigger(now)
    next_fire_at = trigger.next_after(cursor) if trigger else None
    return await store.save_job(spec, cursor, next_fire_at, now)


async def create_job(store: Store, clock: Clock, spec: JobSpec) -> Job:
    """Create a job; unlike :func:`save_job`, refuse one whose name is taken. (Two
    concurrent creates of one name can both pass the check; the later one wins.)"""
    if await store.get_job(spec.namespace, spec.name) is not None:
        raise JobExists(spec.namespace, spec.name)
    return await save_job(store, clock, spec)


# A change to one of these replaces the whole schedule: the others are cleared and the
# job's kind follows the one given (all None: a manual job).
SCHEDULE_FIELDS = ("cron", "interval_seconds", "at")


def merge_job_changes(spec: JobSpec, changes: Mapping[str, Any]) -> JobSpec:
    """``spec`` with ``changes`` (JobSpec field names, or ``payload`` for the payload
    value) applied: only the fields given change. Giving one of ``cron``,
    ``interval_seconds`` or ``at`` replaces the schedule, and None for it makes the job
    manual. The result is validated like any JobSpec."""
    fields = dict(changes)
    if "payload" in fields:
        if "payload_json" in fields:
            raise InvalidArgument("job change", sorted(changes), "payload or payload_json")
        fields["payload_json"] = encode_json("payload", fields.pop("payload"))
    if "kind" not in fields and any(key in fields for key in SCHEDULE_FIELDS):
        schedule = {key: fields.get(key) for key in SCHEDULE_FIELDS}
        fields.update(schedule)
        fields["kind"] = _kind_of(schedule["cron"], schedule["interval_seconds"], schedule["at"])
    try:
        return dataclasses.replace(spec, **fields)
    except TypeError as exc:
        raise InvalidArgument("job change", sorted(changes), f"JobSpec fields ({exc})") from None


async def update_job(
    store: Store,
    clock: Clock,
    namespace: str,
    name: str,
    registry: Registry | None = None,
    **changes: Any,
) -> Job:
    """Change some fields of a job (see :func:`merge_job_changes`); planning carries on
    unless the schedule changed. With ``registry``, the handler must be one it knows
    and the payload must fit the handler's payload type."""
    job = await get_job(store, namespace, name)
    if registry is not None:
        handler = changes.get("handler", job.spec.handler)
        payload = changes["payload"] if "payload" in changes else json.loads(job.spec.payload_json)
        payloads.check_payload(registry, handler, payload)
    return await save_job(store, clock, merge_job_changes(job.spec, changes))


async def get_job(store: Store, namespace: str, name: str) -> Job:
    """The job; JobNotFound too for a name no job can have (a NUL, which PostgreSQL
    would refuse with an error rather than find nothing)."""
    try:
        check_name("namespace", namespace)
        check_name("job", name)
    except InvalidArgument:
        raise JobNotFound(namespace, name) from None
    job = await store.get_job(namespace, name)
    if job is None:
        raise JobNotFound(namespace, name)
    return job


RECENT_STARTS = 20  # slots shown per job: what became of each, and how late it started


async def recent_starts(
    store: Store, jobs: Sequence[Job], per_job: int = RECENT_STARTS
) -> dict[int, list[RecentStart]]:
    """Each job's newest slots: what became of each (its run's state, or missed) and
    how late its run started (slot to start)."""
    found = await store.recent_starts([job.id for job in jobs], per_job)
    return {
        job.id: with_missed_slots(job.trigger, found[job.id], job.updated_at, per_job)
        for job in jobs
    }


async def list_jobs(
    store: Store,
    namespace: str | None = None,
    namespaces: Collection[str] | None = None,
    *,
    owner: str | None = None,
    labels: object = None,
) -> list[Job]:
    """Every job (in ``namespace``, if given) that ``namespaces`` reaches (None: every
    namespace), by namespace and name; with ``owner``, only its jobs, and with
    ``labels`` (a mapping or key/value pairs), only jobs holding every one. Jobs are
    few and read whole, so these are tested here rather than in the store."""
    check_owner(owner)
    wanted = check_labels(labels)
    return [
        job
        for job in await store.list_jobs(namespace)
        if (namespaces is None or job.spec.namespace in namespaces)
        and (owner is None or job.spec.owner == owner)
        and holds_labels(job.spec.labels, wanted)
    ]


async def set_paused(store: Store, clock: Clock, namespace: str, name: str, paused: bool) -> Job:
    job = await get_job(store, namespace, name)
    now = await store.now(clock.db_now())
    trigger = job.trigger
    next_fire_at = trigger.next_after(now) if trigger else None
    updated = await store.set_job_paused(namespace, name, paused, now, next_fire_at, now)
    if updated is None:
        raise JobNotFound(namespace, name)
    return updated


async def delete_job(store: Store, namespace: str, name: str) -> None:
    if not await store.delete_job(namespace, name):
        raise JobNotFound(namespace, name)


async def trigger_job(
    store: Store,
    clock: Clock,
    namespace: str,
    name: str,
    payload: Any = None,
    idempotency_key: str | None = None,
    correlation_id: str | None = None,
    registry: Registry | None = None,
) -> int:
    """Run a job now, whatever its schedule (optionally with another payload, checked
    against the handler's payload type when ``registry`` knows the handler).
    ``correlation_id``: the request that asked for it, stamped on the run."""
    check_idempotency_key(idempotency_key)
    job = await get_job(store, namespace, name)
    if payload is not None and job.spec.parameters is not None:
        payload = await off_loop(apply_parameters, job.spec.parameters, payload)  # an instance
    if payload is not None and registry is not None:
        payloads.check_payload(registry, job.spec.handler, payload)
    payload_json = encode_json("payload", payload) if payload is not None else None
    [enqueued] = await producing.enqueue(
        store, [manual_run(job, payload_json, idempotency_key, correlation_id)], clock.db_now()
    )
    return enqueued.run_id


def cron_preview(
    expression: str, timezone: str = "UTC", count: int = 10, after: datetime | None = None
) -> list[datetime]:
    """The next ``count`` fire instants (UTC) of a cron expression in a time zone."""
    check_positive_int("count", count, MAX_PREVIEW)
    if after is None:
        raise InvalidArgument("after", after, "an aware datetime")
    after = check_instant("after", after)
    trigger = CronTrigger(expression, timezone)
    return fire_times(trigger, after, datetime.max.replace(tzinfo=after.tzinfo), count)
