"""Workflows on a schedule: a job whose runs start a workflow, not a second scheduler.

A workflow's schedule is the job ``workflow:<name>`` (in the workflow's namespace)
whose handler is the built-in :data:`STARTER`. The leader's planner fires it like any
job: one run per slot, with the job's misfire policy, catch-up window, jitter, pause
and resume. That run starts the workflow run with ``rota-run:<its run id>`` as the
workflow run's idempotency key, so a starting run retried after a crash never starts
a second workflow run: a slot starts exactly one (ADR 0022).

Overlap: ``allow`` starts every slot's workflow run; ``skip`` starts none while an
earlier run of the same workflow (in the namespace, among its newest
``OVERLAP_LOOKBACK``) is unfinished, and the starting run's result says which one it
made way for. The job's own overlap policy cannot do this: its runs end as soon as the
workflow run has started, not when the workflow run finishes. ``buffer_one`` is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from rota.clock import Clock
from rota.context import RunContext
from rota.domain.jobs import Job, JobSpec, TriggerKind
from rota.domain.runs import NAME_PATTERN, NAME_RULE
from rota.domain.workflows import StoredWorkflow, WorkflowDefinition
from rota.errors import InvalidArgument, RunNotFound
from rota.handlers import HandlerSpec, Registry, make_spec
from rota.services import schedules
from rota.services import workflows as workflow_service
from rota.store.port import Store

STARTER = "rota.start-workflow"
JOB_PREFIX = "workflow:"
# The job options a workflow schedule may set (the rest are the starter's defaults).
OVERLAP_POLICIES = ("allow", "skip")
OVERLAP_LOOKBACK = 20  # the newest workflow runs a "skip" slot looks at
SCHEDULE_OPTIONS = frozenset(
    {"queue", "priority", "jitter", "catch_up_window", "run_all_cap", "max_attempts"}
)


@dataclass(frozen=True)
class WorkflowSchedule:
    """When a workflow starts by itself: ``cron`` (in ``timezone``), ``interval``
    (seconds) or ``at`` (once); none of them: manual (started by hand or by an event).
    ``payload`` is each scheduled run's workflow payload."""

    cron: str | None = None
    interval: float | timedelta | None = None
    at: datetime | None = None
    timezone: str = "UTC"
    misfire: str = "fire_now"
    overlap: str = "allow"
    payload: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def manual(self) -> bool:
        return self.cron is None and self.interval is None and self.at is None


def job_name(workflow: str) -> str:
    """The name of the job that is ``workflow``'s schedule."""
    name = JOB_PREFIX + workflow
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidArgument(
            "scheduled workflow name", workflow, f"{JOB_PREFIX}<name>: {NAME_RULE}"
        )
    return name


def _job_spec(
    registry: Registry, namespace: str, workflow: str, schedule: WorkflowSchedule
) -> JobSpec:
    if schedule.overlap not in OVERLAP_POLICIES:
        raise InvalidArgument(
            "overlap",
            schedule.overlap,
            "allow or skip (a workflow schedule starts at most one workflow run per slot)",
        )
    unknown = set(schedule.options) - SCHEDULE_OPTIONS
    if unknown:
        raise InvalidArgument(
            "schedule option", sorted(unknown), ", ".join(sorted(SCHEDULE_OPTIONS))
        )
    return schedules.job_spec(
        registry,
        job_name(workflow),
        STARTER,
        # Old schedules' payloads have no "overlap": they allow, as before.
        {"workflow": workflow, "payload": schedule.payload}
        | ({"overlap": schedule.overlap} if schedule.overlap != "allow" else {}),
        cron=schedule.cron,
        interval=schedule.interval,
        at=schedule.at,
        timezone=schedule.timezone,
        namespace=namespace,
        misfire=schedule.misfire,
        **schedule.options,
    )


async def save(
    store: Store,
    clock: Clock,
    registry: Registry,
    definition: WorkflowDefinition,
    namespace: str = "default",
    schedule: WorkflowSchedule | None = None,
) -> tuple[StoredWorkflow, Job | None]:
    """Save a definition and its schedule (none, or a manual one, deletes a schedule it
    had). Everything is checked before anything is written: the definition, the
    schedule's fields, and an ``at`` that has already passed."""
    schedule = schedule or WorkflowSchedule()
    spec = None if schedule.manual else _job_spec(registry, namespace, definition.name, schedule)
    workflow_service.checked(definition, registry)
    if spec is not None:
        definition.payload_of(schedule.payload)  # each slot's values fit the parameters
    if spec is not None and spec.kind is TriggerKind.ONCE and spec.at is not None:
        now = await store.now(clock.db_now())
        if spec.at <= now:
            raise InvalidArgument("at", spec.at, f"an instant after now ({now.isoformat()})")
    stored = await workflow_service.save(store, clock, registry, definition, namespace)
    if spec is None:
        await store.delete_job(namespace, job_name(definition.name))  # if it had one
        return stored, None
    return stored, await schedules.save_job(store, clock, spec)


async def schedule_of(store: Store, namespace: str, workflow: str) -> Job | None:
    """The job that is the workflow's schedule, if it has one."""
    return await store.get_job(namespace, job_name(workflow))


async def schedules_of(store: Store, namespace: str | None) -> dict[tuple[str, str], Job]:
    """Every workflow schedule (in ``namespace``, if given) by (namespace, workflow)."""
    return {
        (job.spec.namespace, job.spec.name.removeprefix(JOB_PREFIX)): job
        for job in await store.list_jobs(namespace)
        if job.spec.handler == STARTER and job.spec.name.startswith(JOB_PREFIX)
    }


def _requested(payload: Any) -> tuple[str, Any, str]:
    if (
        not isinstance(payload, Mapping)
        or not isinstance(payload.get("workflow"), str)
        or payload.get("overlap", "allow") not in OVERLAP_POLICIES
    ):
        raise InvalidArgument(
            "payload", payload, '{"workflow": name, "payload": value, "overlap": allow|skip}'
        )
    return payload["workflow"], payload.get("payload"), payload.get("overlap", "allow")


async def _still_running(store: Store, namespace: str, workflow: str, key: str) -> int | None:
    """With ``skip``: an unfinished earlier run of the workflow, if any. None too when
    this starting run already started its own (an attempt again after a crash: the
    slot's workflow run exists, and starting it again returns it)."""
    recent = await store.list_workflow_runs(workflow, OVERLAP_LOOKBACK, namespace)
    if any(row["idempotency_key"] == key for row in recent):
        return None
    for row in recent:
        if (await store.workflow_run(row["id"])).finished_at is None:
            return int(row["id"])
    return None


async def start_from_run(
    store: Store, clock: Clock, registry: Registry, ctx: RunContext, payload: Any
) -> dict[str, int]:
    """The starter's work: start the workflow its job names, in the run's own namespace
    (never one the payload names: whoever could enqueue it there could not reach
    another), once per run however often the run is attempted."""
    workflow, workflow_payload, overlap = _requested(payload)
    run = await store.get_run(ctx.run_id)
    if run is None:
        raise RunNotFound(ctx.run_id)
    key = f"rota-run:{ctx.run_id}"
    if overlap == "skip":
        running = await _still_running(store, run.namespace, workflow, key)
        if running is not None:
            ctx.log.info("slot skipped: the workflow is still running", workflow=workflow)
            return {"skipped_for": running}
    workflow_run_id = await workflow_service.start(
        store,
        clock,
        registry,
        workflow,
        workflow_payload,
        run.namespace,
        idempotency_key=key,
    )
    ctx.log.info("workflow started", workflow=workflow, workflow_run_id=workflow_run_id)
    return {"workflow_run_id": workflow_run_id}


def starter_spec(start: Callable[[RunContext, Any], Awaitable[dict[str, int]]]) -> HandlerSpec:
    """The built-in handler every App registers: a worker of any App can run a
    workflow schedule's runs."""

    async def start_workflow(ctx: RunContext, payload: dict[str, Any]) -> dict[str, int]:
        return await start(ctx, payload)

    return make_spec(
        start_workflow,
        STARTER,
        queue="default",
        max_attempts=10,
        timeout=60.0,
        retry=None,
        priority=5,
        retry_timeouts=True,
    )
