"""The ``rota`` command: arguments -> settings -> bootstrap. No business rules here."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar
from zoneinfo import ZoneInfo

import click
from click.exceptions import NoArgsIsHelpError
from rich.console import Console
from rich.table import Table

from rota import logs
from rota.bootstrap import open_store
from rota.bootstrap import upgrade as upgrade_schema
from rota.cli import api_commands as cli_api
from rota.cli import backfill as cli_backfill
from rota.cli import events as cli_events
from rota.cli import webhooks as cli_webhooks
from rota.cli import workflows as cli_workflows
from rota.cli.app_loader import app_dir_option, load_app
from rota.cli.config import config as config_group
from rota.cli.config import option, sources
from rota.cli.tls_options import server_tls, tls_options
from rota.clock import SystemClock
from rota.config import Settings
from rota.config.sources import CONFIG_VARIABLE
from rota.engine import loops
from rota.engine.worker import DEFAULT_CONCURRENCY
from rota.engine.worker_http import WorkerHttp
from rota.errors import RotaError, StoreUnavailable
from rota.services import controls as control_service
from rota.services import schedules as schedules_service
from rota.store.port import Store

T = TypeVar("T")
console = Console()


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"rota: error: {message}", err=True)
    sys.exit(code)


def _settings(db: str | None) -> Settings:
    try:
        return Settings.from_env(database_url=db)
    except RotaError as exc:
        _fail(str(exc))  # one line (a bad URL is shown with its password hidden)


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


class _OneLineError(click.ClickException):
    """A usage error (a bad flag value, a missing option) as one line, like every other
    error of the CLI, instead of click's usage block."""

    exit_code = click.UsageError.exit_code  # 2, as click's own usage errors

    def show(self, file: Any = None) -> None:
        click.echo(f"rota: error: {self.format_message()}", err=True)


class _Rota(click.Group):
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _one_line():  # the group's own options (--log-level)
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line():  # every subcommand's arguments
            return super().invoke(ctx)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except (_OneLineError, NoArgsIsHelpError):
        raise
    except click.UsageError as exc:
        raise _OneLineError(exc.format_message()) from None


@click.group(cls=_Rota)
@click.option("--log-level", default="info", type=click.Choice(logs.LEVELS))
@click.option("--log-json", is_flag=True, help="One JSON object per log line.")
@click.option(
    "--config",
    "config_path",
    default=None,
    metavar="PATH",
    help="Settings file, rota.yaml or rota.toml (as ROTA_CONFIG; flags and ROTA_* win).",
)
@click.option(
    "--ca-file",
    default=None,
    metavar="PATH",
    help="Verify the server's TLS certificate against this CA (as ROTA_CA_FILE).",
)
@click.version_option(package_name="rota")
def main(log_level: str, log_json: bool, config_path: str | None, ca_file: str | None) -> None:
    """rota: a distributed job scheduler."""
    logs.configure(log_level, log_json)
    # The flags stand for their variables, set for this process: the App a user's
    # module builds at import (rota.App() -> Settings.from_env) reads the same file as
    # the command does, without a second way to hand it over.
    if config_path is not None:
        os.environ[CONFIG_VARIABLE] = config_path
    if ca_file is not None:
        os.environ["ROTA_CA_FILE"] = ca_file
    if os.environ.get(CONFIG_VARIABLE):
        sources()  # a bad file stops every command before it starts, in one line


@main.command()
@click.option("--app", "app_target", required=True, help="MODULE:ATTRIBUTE of your rota.App.")
@app_dir_option
@db_option
@click.option(
    "--concurrency",
    default=None,
    type=int,
    help=f"Runs at once (default {DEFAULT_CONCURRENCY}; async handlers mostly wait on I/O; "
    "see ADR 0019).",
)
@click.option(
    "--loop",
    type=click.Choice(loops.LOOPS),
    default=None,
    help="Event loop (default auto: uvloop when installed, pip install 'rota[uvloop]').",
)
@click.option("--node-id", default=None, help="Unique worker name (default HOST-PID).")
@click.option("--queues", default=None, help="Comma-separated queues (default: the handlers').")
@click.option("--tags", default=None, help="Comma-separated capabilities, e.g. gpu,region-eu.")
@click.option(
    "--http",
    "http_address",
    default=None,
    metavar="HOST:PORT",
    help="Serve /metrics, /health/live and /health/ready here (off by default).",
)
@tls_options
def worker(
    app_target: str,
    app_dir: str,
    db: str | None,
    concurrency: int | None,
    loop: str | None,
    node_id: str | None,
    queues: str | None,
    tags: str | None,
    http_address: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    tls_ca: str | None,
) -> None:
    """Run a worker until SIGTERM/SIGINT. Each option may also come from ROTA_* or the
    configuration file (worker.*, tls.*): `rota config show` says which did."""
    found = sources()
    address = option(found, "http", http_address)
    try:
        tls = server_tls(found, tls_cert, tls_key, tls_ca)
        http = WorkerHttp.from_env(address, tls) if address else None
    except RotaError as exc:
        _fail(str(exc))
    app = load_app(app_target, app_dir)
    if db:
        app.settings = app.settings.with_overrides(database_url=db)
    queue_list = option(found, "queues", _split(queues) if queues else None)
    try:
        app.run_worker(
            concurrency=option(found, "concurrency", concurrency),
            node_id=option(found, "node_id", node_id),
            queues=queue_list or None,
            tags=option(found, "tags", _split(tags) if tags is not None else None),
            http=http,
            loop=option(found, "loop", loop),
        )
    except StoreUnavailable as exc:
        _fail(str(exc), code=3)
    except RotaError as exc:
        _fail(str(exc))


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@main.group()
def limits() -> None:
    """Cluster-wide caps on running runs (global, per queue, per handler)."""


@limits.command("set")
@click.argument("scope", type=click.Choice(["global", "queue", "handler"]))
@click.argument("name")
@click.argument("max_running", type=int, required=False)
@click.option("--rate", help="At most this many starts per period, e.g. 100/minute.")
@db_option
def set_limit(
    scope: str, name: str, max_running: int | None, rate: str | None, db: str | None
) -> None:
    """At most MAX_RUNNING runs of SCOPE NAME at once (global takes NAME '*'), and/or
    at most --rate starts (queue and handler scopes, counted per rate_key)."""
    if max_running is None and rate is None:
        _fail("give MAX_RUNNING, --rate, or both")
    if max_running is not None:
        limit = _run(
            lambda: _with_store(
                _settings(db), lambda s: control_service.set_limit(s, scope, name, max_running)
            )
        )
        click.echo(f"{limit.scope.value} {limit.name}: at most {limit.max_running} running")
    if rate is not None:
        set_rate = _run(
            lambda: _with_store(
                _settings(db), lambda s: control_service.set_rate(s, scope, name, rate)
            )
        )
        click.echo(f"{set_rate.scope.value} {set_rate.name}: at most {set_rate.rate} starts")


@limits.command("clear")
@click.argument("scope", type=click.Choice(["global", "queue", "handler"]))
@click.argument("name")
@click.option("--rate", "rate_only", is_flag=True, help="Clear the rate, not the cap.")
@db_option
def clear_limit(scope: str, name: str, rate_only: bool, db: str | None) -> None:
    """Remove a cap (or, with --rate, a rate)."""
    clear = control_service.clear_rate if rate_only else control_service.clear_limit
    _run(lambda: _with_store(_settings(db), lambda s: clear(s, scope, name)))
    click.echo(f"{scope} {name}: no {'rate' if rate_only else 'limit'}")


@limits.command("list")
@db_option
def list_limits(db: str | None) -> None:
    """Every cap and rate in force."""
    found = _run(lambda: _with_store(_settings(db), control_service.list_limits))
    rates = _run(lambda: _with_store(_settings(db), control_service.list_rates))
    table = Table("scope", "name", "max running", "rate")
    for limit in found:
        table.add_row(limit.scope.value, limit.name, str(limit.max_running), "")
    for rate in rates:
        table.add_row(rate.scope.value, rate.name, "", str(rate.rate))
    console.print(table)


@main.group()
def breakers() -> None:
    """Cluster-wide circuit breakers (declared with @app.handler(breaker=...))."""


@breakers.command("list")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Only the breakers runs of this namespace moved (repeatable; default: all).",
)
@db_option
def list_breakers(namespaces: tuple[str, ...], db: str | None) -> None:
    """Every breaker: its state, failures in a row, the current failure-rate window's
    outcomes (failed / all), and the cause of its last change."""
    clock = SystemClock()
    reach = namespaces or None
    found = _run(
        lambda: _with_store(_settings(db), lambda s: control_service.list_breakers(s, clock, reach))
    )
    table = Table("handler", "key", "state", "failures", "window", "probes left", "cause")
    for b in found:
        window = f"{b.window_failures}/{b.window_calls}" if b.window_started_at else "-"
        state, probes = b.state.value, str(b.probes_left)
        table.add_row(b.handler, b.key, state, str(b.failures), window, probes, b.cause or "")
    console.print(table)


@breakers.command("reset")
@click.argument("handler")
@click.option("--key", default="", help="The breaker_key (default: runs without one).")
@db_option
def reset_breaker(handler: str, key: str, db: str | None) -> None:
    """Close a breaker now (recorded as a transition)."""
    clock = SystemClock()
    _run(
        lambda: _with_store(
            _settings(db), lambda s: control_service.reset_breaker(s, clock, handler, key)
        )
    )
    click.echo(f"{handler} {key or '(no key)'}: closed")


@main.group()
def db() -> None:
    """Schema management."""


@db.command()
@db_option
def upgrade(db: str | None) -> None:
    """Apply pending migrations."""
    settings = _settings(db)
    applied = _run(lambda: upgrade_schema(settings))
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
@app_dir_option
@db_option
@click.option("--priority", type=int, default=None)
@click.option("--idempotency-key", default=None)
def enqueue(
    handler: str,
    payload: str,
    app_target: str,
    app_dir: str,
    db: str | None,
    priority: int | None,
    idempotency_key: str | None,
) -> None:
    """Enqueue one run of HANDLER with a JSON PAYLOAD."""
    app = load_app(app_target, app_dir)
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


# jobs, runs, dlq, workers, token and server go through the HTTP API (rota.cli.api_commands).
for _command in cli_api.COMMANDS:
    main.add_command(_command)
main.add_command(cli_webhooks.webhooks)
main.add_command(cli_events.events)
cli_api.jobs.add_command(cli_backfill.backfill)
# A job with a trigger is a schedule: `rota schedules list|pause|resume|...` is the same
# group under the name operators look for first.
main.add_command(cli_api.jobs, name="schedules")
main.add_command(cli_workflows.workflows)
main.add_command(config_group)


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
