"""The buttons: each is a POST form with the session's CSRF token, checked against the
scope its API twin needs (the same guard, the same 403), done through the same use
case, and audited under its twin's name (the route names below are the API's)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from rota.api.context import audit_target, correlation_id
from rota.dashboard.pages import run_id_of
from rota.dashboard.sessions import Session
from rota.dashboard.web import back_to, checked_form, dashboard, local_path, require, viewer
from rota.domain.access import Scope
from rota.domain.jobs import TriggerKind
from rota.domain.values import MAX_INT32, whole_number
from rota.errors import InvalidArgument, InvalidTransition, JobNotFound, RunNotFound
from rota.services import cluster as cluster_service
from rota.services import controls as control_service
from rota.services import runs as run_service
from rota.services import schedules

router = APIRouter()
Viewer = Annotated[Session, Depends(viewer)]
MAX_SELECTION = run_service.MAX_REPLAY_BATCH


@router.post("/runs/{run_id}/cancel", name="cancel_run")
async def cancel_run(request: Request, run_id: str, session: Viewer) -> Response:
    audit_target(request, f"run {run_id[:40]}")
    await checked_form(request, session)
    require(session.principal, Scope.TRIGGER)
    context = dashboard(request)
    run = await run_service.cancel(
        await context.store(), context.api.clock, run_id_of(run_id), session.principal.namespaces
    )
    request.state.audit_namespace = run.namespace
    return back_to(f"/runs/{run.id}", "cancel-requested")


@router.post("/runs/{run_id}/requeue", name="requeue_run")
async def requeue_run(request: Request, run_id: str, session: Viewer) -> Response:
    audit_target(request, f"run {run_id[:40]}")
    await checked_form(request, session)
    require(session.principal, Scope.TRIGGER)
    context = dashboard(request)
    store = await context.store()
    old = await run_service.get_run(store, run_id_of(run_id), session.principal.namespaces)
    request.state.audit_namespace = old.namespace
    new_id = await run_service.replay(
        store, context.api.clock, old.id, session.principal.namespaces, correlation_id(request)
    )
    return back_to(f"/runs/{new_id}", "replayed")


def _selection(fields: dict[str, list[str]]) -> list[int]:
    chosen = fields.get("run_id", [])
    if not 1 <= len(chosen) <= MAX_SELECTION:
        raise InvalidArgument("run_id", len(chosen), f"a selection of 1-{MAX_SELECTION} runs")
    return [run_id_of(value) for value in chosen]


@router.post("/runs/bulk", name="bulk_runs")
async def bulk_runs(request: Request, session: Viewer) -> Response:
    """Cancel or requeue (replay) the selected runs, each on its own: one that cannot
    be changed is counted, and does not stop the others."""
    fields = await checked_form(request, session)
    run_ids = _selection(fields)
    action = fields.get("action", [""])[0]
    audit_target(request, f"{action} runs " + ",".join(map(str, run_ids[:20])))
    require(session.principal, Scope.TRIGGER)
    context = dashboard(request)
    store, clock, reach = await context.store(), context.api.clock, session.principal.namespaces
    back = local_path(fields.get("back", ["/runs"])[0], "/runs")
    if action == "requeue":
        results = await run_service.replay_many(
            store, clock, run_ids, reach, correlation_id(request)
        )
        failed = sum(1 for r in results if r.new_run_id is None)
        done, code = len(results) - failed, "replayed-many"
    elif action == "cancel":
        done = failed = 0
        for run_id in dict.fromkeys(run_ids):
            try:
                await run_service.cancel(store, clock, run_id, reach)
                done += 1
            except (RunNotFound, InvalidTransition):
                failed += 1
        code = "cancelled-many"
    else:
        raise InvalidArgument("action", action[:40], "cancel or requeue")
    return back_to(back, "not-all" if failed else code, failed or done)


@router.post("/dlq/{run_id}/replay", name="replay_dead_run")
async def replay_dead_run(request: Request, run_id: str, session: Viewer) -> Response:
    return await requeue_run(request, run_id, session)


async def _pause(
    request: Request, session: Session, namespace: str, name: str, paused: bool
) -> Response:
    audit_target(request, f"job {namespace[:100]}/{name[:100]}", namespace[:100])
    await checked_form(request, session)
    require(session.principal, Scope.MANAGE)
    context = dashboard(request)
    if not session.principal.can_see(namespace):
        raise JobNotFound(namespace, name)
    await schedules.set_paused(await context.store(), context.api.clock, namespace, name, paused)
    return back_to(f"/jobs/{namespace}/{name}", "paused" if paused else "resumed")


@router.post("/jobs/{namespace}/{name}/pause", name="pause_job")
async def pause_job(request: Request, namespace: str, name: str, session: Viewer) -> Response:
    return await _pause(request, session, namespace, name, True)


@router.post("/jobs/{namespace}/{name}/resume", name="resume_job")
async def resume_job(request: Request, namespace: str, name: str, session: Viewer) -> Response:
    return await _pause(request, session, namespace, name, False)


@router.post("/jobs/{namespace}/{name}/trigger", name="trigger_job")
async def trigger_job(request: Request, namespace: str, name: str, session: Viewer) -> Response:
    audit_target(request, f"job {namespace[:100]}/{name[:100]}", namespace[:100])
    await checked_form(request, session)
    require(session.principal, Scope.TRIGGER)
    context = dashboard(request)
    if not session.principal.can_see(namespace):
        raise JobNotFound(namespace, name)
    run_id = await schedules.trigger_job(
        await context.store(),
        context.api.clock,
        namespace,
        name,
        correlation_id=correlation_id(request),
        registry=context.api.rota_app.registry,
    )
    return back_to(f"/runs/{run_id}", "triggered")


# The fields the job form edits; the rest of the definition is kept as it is.
EDITABLE = (
    "cron",
    "interval_seconds",
    "timezone",
    "misfire",
    "overlap",
    "priority",
    "max_attempts",
)


def job_changes(fields: dict[str, list[str]]) -> dict[str, Any]:
    """The form's values as JobSpec changes: a blank field is left as it was; a cron
    expression or an interval makes that the trigger (JobSpec validates the rest)."""
    given = {name: fields.get(name, [""])[0].strip() for name in EDITABLE}
    changes: dict[str, Any] = {}
    if given["cron"] and given["interval_seconds"]:
        raise InvalidArgument("cron", given["cron"], "a cron expression or an interval, not both")
    if given["cron"]:
        changes.update(kind=TriggerKind.CRON, cron=given["cron"], interval_seconds=None, at=None)
    elif given["interval_seconds"]:
        changes.update(
            kind=TriggerKind.INTERVAL,
            interval_seconds=_number("interval_seconds", given["interval_seconds"], float),
            cron=None,
            at=None,
            anchor=None,
        )
    for name in ("timezone", "misfire", "overlap"):
        if given[name]:
            changes[name] = given[name]
    for name in ("priority", "max_attempts"):
        if given[name]:
            changes[name] = _number(name, given[name], int)
    return changes


def _number(name: str, text: str, kind: type[int] | type[float]) -> Any:
    try:
        return kind(text[:30])
    except ValueError:
        raise InvalidArgument(name, text[:30], f"a number ({kind.__name__})") from None


@router.post("/jobs/{namespace}/{name}", name="update_job")
async def update_job(request: Request, namespace: str, name: str, session: Viewer) -> Response:
    audit_target(request, f"job {namespace[:100]}/{name[:100]}", namespace[:100])
    fields = await checked_form(request, session)
    require(session.principal, Scope.MANAGE)
    if not session.principal.can_see(namespace):
        raise JobNotFound(namespace, name)
    context = dashboard(request)
    changes = job_changes(fields)
    if changes:
        await schedules.update_job(
            await context.store(), context.api.clock, namespace, name, **changes
        )
    return back_to(f"/jobs/{namespace}/{name}", "job-saved")


async def _worker(request: Request, session: Session, node_id: str, drain: bool) -> Response:
    audit_target(request, f"worker {node_id[:200]}")
    await checked_form(request, session)
    require(session.principal, Scope.ADMIN, cluster_wide=True)
    context = dashboard(request)
    store, clock = await context.store(), context.api.clock
    if drain:
        await cluster_service.drain_worker(store, clock, node_id)
    else:
        await cluster_service.resume_worker(store, clock, node_id)
    return back_to("/workers", "draining" if drain else "worker-resumed")


@router.post("/workers/{node_id}/drain", name="drain_worker")
async def drain_worker(request: Request, node_id: str, session: Viewer) -> Response:
    return await _worker(request, session, node_id, True)


@router.post("/workers/{node_id}/resume", name="resume_worker")
async def resume_worker(request: Request, node_id: str, session: Viewer) -> Response:
    return await _worker(request, session, node_id, False)


@router.post("/limits", name="set_limit")
async def set_limit(request: Request, session: Viewer) -> Response:
    fields = await checked_form(request, session)
    scope, name = fields.get("scope", [""])[0], fields.get("name", [""])[0].strip()
    audit_target(request, f"limit {scope[:40]}:{name[:100]}")
    require(session.principal, Scope.ADMIN, cluster_wide=True)
    text = fields.get("max_running", [""])[0].strip()
    max_running = whole_number("max_running", text, 1, MAX_INT32)
    context = dashboard(request)
    await control_service.set_limit(await context.store(), scope, name or "*", max_running)
    return back_to("/limits", "limit-set")


@router.post("/limits/clear", name="clear_limit")
async def clear_limit(request: Request, session: Viewer) -> Response:
    fields = await checked_form(request, session)
    scope, name = fields.get("scope", [""])[0], fields.get("name", [""])[0]
    audit_target(request, f"limit {scope[:40]}:{name[:100]}")
    require(session.principal, Scope.ADMIN, cluster_wide=True)
    context = dashboard(request)
    await control_service.clear_limit(await context.store(), scope, name)
    return back_to("/limits", "limit-cleared")
