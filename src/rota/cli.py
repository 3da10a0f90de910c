"""The ``rota`` command: arguments -> settings -> bootstrap. No business rules here."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, TypeVar
from zoneinfo import ZoneInfo

import click
from rich.console import Console
from rich.table import Table

from rota import logs, services
from rota import schedules as schedules_service
from rota.app import App
from rota.bootstrap import open_store
from rota.clock import SystemClock
from rota.config import Settings
from rota.errors import RotaError, StoreUnavailable
from rota.store.port import Store

T = TypeVar("T")
console = Console()


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"rota: error: {message}", err=True)
    sys.exit(code)


def load_app(target: str) -> App:
    """``package.module:attribute`` -> the App it names."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        _fail(f"--app {target!r}: expected MODULE:ATTRIBUTE, e.g. myproject.tasks:app")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        _fail(f"--app {target!r}: cannot import {module_name!r} ({exc})")
    app = getattr(module, attribute, None)
    if not isinstance(app, App):
        _fail(f"--app {target!r}: {module_name}.{attribute} is not a rota.App")
    return app


def _settings(db: str | None) -> Settings:
    return Settings.from_env(database_url=db)


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine, turning rota errors into one clear line and a non-zero exit."""
    try:
        return asyncio.run(make())
    except StoreUnavailable as exc:
        _fail(str(exc), code=3)
    except RotaError as exc:
        _fail(str(exc))


async def _with_store(settings: Settings, fn: Callable[[Store], Coroutine[Any, Any, T]]) -> T:
    store = await open_store(settings)
    try:
        return await fn(store)
    finally:
        await store.close()


db_option = click.option(
    "--db",
    envvar="ROTA_DATABASE_URL",
    default=None,
    help="Database URL (default sqlite:///rota.db).",
)


@click.group()
@click.option("--log-level", default="info", type=click.Choice(logs.LEVELS))
@click.option("--log-json", is_flag=True, help="One JSON object per log line.")
@click.version_option(package_name="rota")
def main(log_level: str, log_json: bool) -> None:
    """rota: a distributed job scheduler."""
    logs.configure(log_level, log_json)


@main.command()
@click.option("--app", "app_target", required=True, help="MODULE:ATTRIBUTE of your rota.App.")
@db_option
@click.option("--concurrency", default=8, show_default=True, type=int)
@click.option("--node-id", default=None, help="Unique worker name (default HOST-PID).")
@click.option("--queues", default=None, help="Comma-separated queues (default: the handlers').")
def worker(
    app_target: str, db: str | None, concurrency: int, node_id: str | None, queues: str | None
) -> None:
    """Run a worker until SIGTERM/SIGINT."""
    app = load_app(app_target)
    if db:
        app.settings = app.settings.with_overrides(database_url=db)
    queue_list = [q.strip() for q in queues.split(",")] if queues else None
    try:
        app.run_worker(concurrency=concurrency, node_id=node_id, queues=queue_list)
    except StoreUnavailable as exc:
        _fail(str(exc), code=3)
    except RotaError as exc:
        _fail(str(exc))


@main.group()
def db() -> None:
    """Schema management."""


@db.command()
@db_option
def upgrade(db: str | None) -> None:
    """Apply pending migrations."""
    settings = _settings(db).with_overrides(auto_migrate=False)

    async def go() -> list[int]:
        from rota.bootstrap import make_store

        store = make_store(settings)
        await store.open()
        try:
            status = await store.schema_status()
            if status.current > status.latest:
                from rota.errors import SchemaMismatch

                raise SchemaMismatch(status.current, status.latest)
            return await store.migrate()
        finally:
            await store.close()

    applied = _run(go)
    click.echo(f"applied migrations {applied}" if applied else "schema already up to date")


@db.command()
@db_option
def status(db: str | None) -> None:
    """Show the schema version."""
    settings = _settings(db)

    async def go() -> Any:
        from rota.bootstrap import make_store

        store = make_store(settings)
        await store.open()
        try:
            return await store.schema_status()
        finally:
            await store.close()

    result = _run(go)
    click.echo(f"schema version {result.current} (this rota knows {result.latest})")


@main.command()
@click.argument("handler")
@click.argument("payload", default="null")
@click.option("--app", "app_target", required=True, help="MODULE:ATTRIBUTE of your rota.App.")
@db_option
@click.option("--priority", type=int, default=None)
@click.option("--idempotency-key", default=None)
def enqueue(
    handler: str,
    payload: str,
    app_target: str,
    db: str | None,
    priority: int | None,
    idempotency_key: str | None,
) -> None:
    """Enqueue one run of HANDLER with a JSON PAYLOAD."""
    app = load_app(app_target)
    if db:
        app.settings = app.settings.with_overrides(database_url=db)
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as exc:
        _fail(f"payload {payload!r} is not JSON: {exc}")
    try:
        run_id = app.enqueue(handler, value, priority=priority, idempotency_key=idempotency_key)
    except StoreUnavailable as exc:
        _fail(str(exc), code=3)
    except RotaError as exc:
        _fail(str(exc))
    finally:
        app.close()
    click.echo(run_id)


@main.group()
def runs() -> None:
    """Inspect runs."""


@runs.command("list")
@db_option
@click.option("--state", default=None)
@click.option("--handler", default=None)
@click.option("--limit", default=20, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True)
def list_runs(
    db: str | None, state: str | None, handler: str | None, limit: int, as_json: bool
) -> None:
    """List runs, newest first."""
    found = _run(
        lambda: _with_store(
            _settings(db),
            lambda s: services.list_runs(s, state=state, handler=handler, limit=limit),
        )
    )
    if as_json:
        click.echo(json.dumps([_run_json(r) for r in found], indent=2))
        return
    table = Table("id", "handler", "state", "attempt", "worker", "error")
    for r in found:
        table.add_row(
            str(r.id),
            r.handler,
            r.state.value,
            f"{r.attempt}/{r.max_attempts}",
            r.worker_id or "",
            (r.error or "")[:60],
        )
    console.print(table)


@runs.command("show")
@click.argument("run_id", type=int)
@db_option
@click.option("--json", "as_json", is_flag=True)
def show_run(run_id: int, db: str | None, as_json: bool) -> None:
    """One run with its attempts and log lines."""
    detail = _run(lambda: _with_store(_settings(db), lambda s: services.run_detail(s, run_id)))
    if as_json:
        out = _run_json(detail.run)
        out["attempts"] = [
            {
                "attempt": a.attempt,
                "fence": a.fence,
                "worker": a.worker_id,
                "outcome": a.outcome.value,
                "duration": a.duration,
                "error": a.error,
            }
            for a in detail.attempts
        ]
        out["logs"] = [
            {"at": x.at.isoformat(), "level": x.level, "message": x.message} for x in detail.logs
        ]
        click.echo(json.dumps(out, indent=2))
        return
    r = detail.run
    console.print(
        f"[bold]run {r.id}[/] {r.handler} [bold]{r.state.value}[/] "
        f"attempt {r.attempt}/{r.max_attempts} fence {r.fence}"
    )
    if r.error:
        console.print(f"error: {r.error}")
    table = Table("attempt", "fence", "worker", "outcome", "duration s", "error")
    for a in detail.attempts:
        table.add_row(
            str(a.attempt),
            str(a.fence),
            a.worker_id or "",
            a.outcome.value,
            f"{a.duration:.3f}" if a.duration is not None else "",
            (a.error or "")[:60],
        )
    console.print(table)
    for line in detail.logs:
        console.print(f"  {line.at:%H:%M:%S} {line.level:7} {line.message}")


def _run_json(r: Any) -> dict[str, Any]:
    return {
        "id": r.id,
        "handler": r.handler,
        "queue": r.queue,
        "state": r.state.value,
        "attempt": r.attempt,
        "max_attempts": r.max_attempts,
        "fence": r.fence,
        "worker": r.worker_id,
        "payload": r.payload,
        "result": r.result,
        "error": r.error,
        "created_at": r.created_at.isoformat(),
        "finished_at": r.finished_at.isoformat() if r.finished_at else None,
        "replay_of": r.replay_of,
    }


@runs.command("cancel")
@click.argument("run_id", type=int)
@db_option
def cancel_run(run_id: int, db: str | None) -> None:
    """Cancel a waiting run, or ask a running one to stop."""
    run = _run(
        lambda: _with_store(_settings(db), lambda s: services.cancel(s, SystemClock(), run_id))
    )
    click.echo(
        f"run {run.id}: {run.state.value}" + (" (cancel requested)" if run.cancel_requested else "")
    )


@runs.command("replay")
@click.argument("run_id", type=int)
@db_option
def replay_run(run_id: int, db: str | None) -> None:
    """Re-run a dead-lettered, failed or cancelled run as a fresh run."""
    new_id = _run(
        lambda: _with_store(_settings(db), lambda s: services.replay(s, SystemClock(), run_id))
    )
    click.echo(new_id)


@main.group()
def schedules() -> None:
    """Jobs with schedules: list, pause, resume, delete, trigger."""


def _job_row(job: Any) -> dict[str, Any]:
    spec = job.spec
    return {
        "name": job.spec.name,
        "namespace": spec.namespace,
        "handler": spec.handler,
        "schedule": spec.schedule_text(job.created_at),
        "misfire": spec.misfire.value,
        "overlap": spec.overlap.value,
        "paused": job.paused,
        "next_fire_at": job.next_fire_at.isoformat() if job.next_fire_at else None,
    }


@schedules.command("list")
@db_option
@click.option("--namespace", default=None)
@click.option("--json", "as_json", is_flag=True)
def list_schedules(db: str | None, namespace: str | None, as_json: bool) -> None:
    """Every job and when it fires next."""
    jobs = _run(lambda: _with_store(_settings(db), lambda s: s.list_jobs(namespace)))
    rows = [_job_row(job) for job in jobs]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table("name", "handler", "schedule", "misfire", "overlap", "paused", "next fire (UTC)")
    for row in rows:
        table.add_row(
            row["name"],
            row["handler"],
            row["schedule"],
            row["misfire"],
            row["overlap"],
            "yes" if row["paused"] else "",
            row["next_fire_at"] or "-",
        )
    console.print(table)


def _pause_command(paused: bool) -> Callable[[str, str | None, str], None]:
    def command(name: str, db: str | None, namespace: str) -> None:
        job = _run(
            lambda: _with_store(
                _settings(db),
                lambda s: schedules_service.set_paused(s, SystemClock(), namespace, name, paused),
            )
        )
        state = "paused" if job.paused else f"resumed; next fire {job.next_fire_at}"
        click.echo(f"{name}: {state}")

    return command


for _verb, _paused in (("pause", True), ("resume", False)):
    schedules.command(_verb, help=f"{_verb.capitalize()} a job's schedule.")(
        click.argument("name")(
            db_option(click.option("--namespace", default="default")(_pause_command(_paused)))
        )
    )


@schedules.command("delete")
@click.argument("name")
@db_option
@click.option("--namespace", default="default")
def delete_schedule(name: str, db: str | None, namespace: str) -> None:
    """Delete a job (its runs stay)."""
    _run(
        lambda: _with_store(
            _settings(db), lambda s: schedules_service.delete_job(s, namespace, name)
        )
    )
    click.echo(f"{name}: deleted")


@schedules.command("trigger")
@click.argument("name")
@db_option
@click.option("--namespace", default="default")
def trigger_schedule(name: str, db: str | None, namespace: str) -> None:
    """Run a job now; prints the run id."""
    run_id = _run(
        lambda: _with_store(
            _settings(db),
            lambda s: schedules_service.trigger_job(s, SystemClock(), namespace, name),
        )
    )
    click.echo(run_id)


@main.group()
def cron() -> None:
    """Cron expressions."""


@cron.command("next")
@click.argument("expression")
@click.option("--tz", "timezone", default="UTC", show_default=True, help="IANA time zone.")
@click.option("-n", "count", default=10, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True)
def cron_next(expression: str, timezone: str, count: int, as_json: bool) -> None:
    """The next fire instants of EXPRESSION, in local time and UTC."""
    try:
        instants = schedules_service.cron_preview(
            expression, timezone, count, after=SystemClock().now()
        )
    except RotaError as exc:
        _fail(str(exc))
    zone = ZoneInfo(timezone)
    if as_json:
        click.echo(
            json.dumps(
                [{"local": t.astimezone(zone).isoformat(), "utc": t.isoformat()} for t in instants],
                indent=2,
            )
        )
        return
    table = Table(f"local ({timezone})", "UTC")
    for t in instants:
        table.add_row(
            t.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z"), t.strftime("%Y-%m-%d %H:%M:%S")
        )
    console.print(table)


if __name__ == "__main__":  # pragma: no cover
    main()
