"""Jobs: a handler + payload + options + an optional schedule."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, Response

from rota import payloads
from rota.api.auth import Manager, Reader, Trigger
from rota.api.context import Context, StoreDep, audit_target, correlation_id
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.fields import IdempotencyKey, Name
from rota.api.schemas.jobs import JobCreate, JobList, JobOut, JobUpdate, TriggerRequest
from rota.api.schemas.runs import RunCreated
from rota.domain.access import Principal
from rota.domain.jobs import JobSpec
from rota.domain.labels import LABEL_FILTER_RULE, parse_labels
from rota.errors import JobNotFound
from rota.services import schedules

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])
NamespaceQuery = Annotated[Name, Query(description="The job's namespace.")]
# JobUpdate's field names that differ from the JobSpec field they change.
_SPEC_NAMES = {"timeout_seconds": "timeout"}


def _visible(principal: Principal, namespace: str, name: str) -> None:
    if not principal.can_see(namespace):
        raise JobNotFound(namespace, name)


def _spec(context: Context, name: str, namespace: str, fields: dict[str, Any]) -> JobSpec:
    """Request fields -> a validated JobSpec (run options default from the handler)."""
    registry = context.rota_app.registry
    payloads.check_payload(registry, fields["handler"], fields.get("payload"))
    return schedules.job_spec(
        registry,
        name,
        fields["handler"],
        fields.get("payload"),
        cron=fields.get("cron"),
        interval=fields.get("interval_seconds"),
        at=fields.get("at"),
        timezone=fields.get("timezone") or "UTC",
        namespace=namespace,
        misfire=fields.get("misfire"),
        overlap=fields.get("overlap"),
        catch_up_window_seconds=fields.get("catch_up_window_seconds"),
        run_all_cap=fields.get("run_all_cap"),
        jitter_seconds=fields.get("jitter_seconds"),
        queue=fields.get("queue"),
        priority=fields.get("priority"),
        max_attempts=fields.get("max_attempts"),
        timeout=fields.get("timeout_seconds"),
        parameters=fields.get("parameters"),
        owner=fields.get("owner"),
        labels=fields.get("labels"),
    )


@router.get("", responses=responses(*AUTHENTICATED))
async def list_jobs(
    principal: Reader,
    store: StoreDep,
    namespace: Annotated[Name | None, Query()] = None,
    owner: Annotated[str | None, Query(max_length=200, description="Jobs of this owner.")] = None,
    label: Annotated[
        list[str] | None,
        Query(
            description=f"Jobs with this label, as {LABEL_FILTER_RULE}; repeatable, every "
            "one must match.",
        ),
    ] = None,
) -> JobList:
    """Every job the caller can see (optionally in one namespace, of one owner, with
    some labels), by namespace and name."""
    jobs = await schedules.list_jobs(
        store, namespace, principal.namespaces, owner=owner, labels=parse_labels(label or ())
    )
    return JobList(items=[JobOut.of(job) for job in jobs])


@router.post("", status_code=201, responses=responses(*AUTHENTICATED, 400, 409))
async def create_job(
    request: Request, principal: Manager, context: Context, store: StoreDep, body: JobCreate
) -> JobOut:
    """Create a job. 409 if the name is taken in its namespace (update it instead)."""
    audit_target(request, f"job {body.namespace}/{body.name}", body.namespace)
    _visible(principal, body.namespace, body.name)
    fields = body.model_dump(exclude={"name", "namespace"})
    spec = _spec(context, body.name, body.namespace, fields)
    return JobOut.of(await schedules.create_job(store, context.clock, spec))


@router.get("/{name}", responses=responses(*AUTHENTICATED, 404))
async def get_job(
    name: Name, principal: Reader, store: StoreDep, namespace: NamespaceQuery = "default"
) -> JobOut:
    """One job: its schedule, policies, next fire, planning state and its newest slots
    with how late each run started."""
    _visible(principal, namespace, name)
    job = await schedules.get_job(store, namespace, name)
    starts = await schedules.recent_starts(store, [job])
    return JobOut.of(job, starts[job.id])


@router.patch("/{name}", responses=responses(*AUTHENTICATED, 400, 404))
async def update_job(
    request: Request,
    name: Name,
    principal: Manager,
    context: Context,
    store: StoreDep,
    body: JobUpdate,
    namespace: NamespaceQuery = "default",
) -> JobOut:
    """Change the fields given. Planning carries on unless the schedule changed."""
    audit_target(request, f"job {namespace}/{name}", namespace)
    _visible(principal, namespace, name)
    changes = {
        _SPEC_NAMES.get(key, key): value
        for key, value in body.model_dump(include=body.model_fields_set).items()
        # JSON null leaves a field as it is, except where null is a value: no schedule
        # (a manual job), a null payload, no owner.
        if value is not None or key in schedules.SCHEDULE_FIELDS or key in ("payload", "owner")
    }
    job = await schedules.update_job(
        store, context.clock, namespace, name, context.rota_app.registry, **changes
    )
    return JobOut.of(job)


@router.delete("/{name}", status_code=204, responses=responses(*AUTHENTICATED, 404))
async def delete_job(
    request: Request,
    name: Name,
    principal: Manager,
    store: StoreDep,
    namespace: NamespaceQuery = "default",
) -> Response:
    """Delete a job; its runs stay."""
    audit_target(request, f"job {namespace}/{name}", namespace)
    _visible(principal, namespace, name)
    await schedules.delete_job(store, namespace, name)
    return Response(status_code=204)


async def _pause(
    request: Request,
    context: Context,
    principal: Principal,
    name: str,
    namespace: str,
    paused: bool,
) -> JobOut:
    audit_target(request, f"job {namespace}/{name}", namespace)
    _visible(principal, namespace, name)
    store = await context.store()
    return JobOut.of(await schedules.set_paused(store, context.clock, namespace, name, paused))


@router.post("/{name}/pause", responses=responses(*AUTHENTICATED, 404))
async def pause_job(
    request: Request,
    name: Name,
    principal: Manager,
    context: Context,
    namespace: NamespaceQuery = "default",
) -> JobOut:
    """Stop planning runs for the job (runs already made are untouched)."""
    return await _pause(request, context, principal, name, namespace, True)


@router.post("/{name}/resume", responses=responses(*AUTHENTICATED, 404))
async def resume_job(
    request: Request,
    name: Name,
    principal: Manager,
    context: Context,
    namespace: NamespaceQuery = "default",
) -> JobOut:
    """Plan again from now; slots that fell in the pause are skipped."""
    return await _pause(request, context, principal, name, namespace, False)


@router.post("/{name}/trigger", status_code=202, responses=responses(*AUTHENTICATED, 400, 404))
async def trigger_job(
    request: Request,
    name: Name,
    principal: Trigger,
    context: Context,
    store: StoreDep,
    body: Annotated[TriggerRequest | None, Body()] = None,
    namespace: NamespaceQuery = "default",
    idempotency_key: IdempotencyKey = None,
) -> RunCreated:
    """Run the job now, whatever its schedule; the body's payload replaces the job's."""
    audit_target(request, f"job {namespace}/{name}", namespace)
    _visible(principal, namespace, name)
    payload = body.payload if body is not None and "payload" in body.model_fields_set else None
    run_id = await schedules.trigger_job(
        store,
        context.clock,
        namespace,
        name,
        payload,
        idempotency_key,
        correlation_id(request),
        context.rota_app.registry,
    )
    return RunCreated(run_id=run_id)
