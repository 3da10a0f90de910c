"""The ``rota`` commands that go through the HTTP API: jobs, runs, dlq, workers, token,
and ``rota server`` itself. Readable tables by default, ``--json`` for scripts; an
error is one line (``rota: error: ...``) and a non-zero exit (3: server unreachable)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.table import Table

from rota.cli.app_loader import app_dir_option
from rota.cli.config import option as setting
from rota.cli.config import sources
from rota.cli.tls_options import server_tls, tls_options
from rota.client import ApiError, RotaClient, RunNotFinished, ServerUnreachable
from rota.endpoint import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_URL
from rota.errors import RotaError

F = TypeVar("F", bound=Callable[..., Any])
console = Console()


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"rota: error: {message}", err=True)
    sys.exit(code)


def api_options(command: F) -> F:
    """--url / ROTA_URL, --token / ROTA_TOKEN and --json on every API command."""
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)
    command = click.option(
        "--token", default=None, help="A token or API key (ROTA_TOKEN, ROTA_TOKEN_FILE)."
    )(command)
    return click.option(
        "--url", default=None, help=f"rota server (ROTA_URL, client.url; default {DEFAULT_URL})."
    )(command)


@contextmanager
def _client(url: str | None, token: str | None, *, anonymous: bool = False) -> Iterator[RotaClient]:
    """A client on --url/--token, else ROTA_URL/ROTA_TOKEN (or ROTA_TOKEN_FILE), else
    client.* in the configuration file; the server's certificate is checked against
    --ca-file / ROTA_CA_FILE / client.ca_file when one is given."""
    found = sources()
    try:
        client = RotaClient(
            setting(found, "url", url),
            None if anonymous else setting(found, "token", token),
            ca_file=setting(found, "ca_file"),
        )
    except RotaError as exc:
        _fail(str(exc), code=2)
    try:
        yield client
    except ServerUnreachable as exc:
        _fail(str(exc), code=3)
    except ApiError as exc:
        _fail(str(exc))
    except RotaError as exc:
        _fail(str(exc))
    finally:
        client.close()


def _json_arg(name: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{name} {text!r} is not JSON: {exc}", code=2)


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def _table(columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(*columns)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(table)


# -- jobs -----------------------------------------------------------------------------
@click.group()
def jobs() -> None:
    """Jobs: a handler + payload + options + an optional schedule."""


def _job_rows(items: list[dict[str, Any]]) -> None:
    _table(
        ["namespace", "name", "handler", "schedule", "paused", "next fire (UTC)", "planning"],
        [
            [
                j["namespace"],
                j["name"],
                j["handler"],
                j["schedule"],
                "yes" if j["paused"] else "",
                j["next_fire_at"] or "-",
                _planning(j),
            ]
            for j in items
        ],
    )


def _planning(job: dict[str, Any]) -> str:
    """'ok', or the planner's last error on this job and when it tries again."""
    error = job.get("planning_error")
    if not error:
        return "ok"
    return f"FAILED {job.get('planning_failed_at')}, retry {job.get('planning_retry_at')}: {error}"


@jobs.command("list")
@api_options
@click.option("--namespace", default=None)
def jobs_list(url: str | None, token: str | None, as_json: bool, namespace: str | None) -> None:
    """Every job you can see."""
    with _client(url, token) as client:
        items = client.list_jobs(namespace)
    _print_json(items) if as_json else _job_rows(items)


@jobs.command("show")
@click.argument("name")
@api_options
@click.option("--namespace", default="default", show_default=True)
def jobs_show(name: str, url: str | None, token: str | None, as_json: bool, namespace: str) -> None:
    """One job."""
    with _client(url, token) as client:
        job = client.get_job(name, namespace)
    if as_json:
        _print_json(job)
        return
    starts = job.pop("recent_starts", [])
    _table(
        ["field", "value"],
        [[k, json.dumps(v) if isinstance(v, dict | list) else v] for k, v in job.items()]
        + [["recent starts", _starts(starts)]],
    )


def _starts(starts: list[dict[str, Any]]) -> str:
    """Each recent slot and how late its run started: "12:00:02 +4 ms", or "skipped"."""
    if not starts:
        return "none yet"
    shown = []
    for start in starts:
        slot = str(start["slot_at"])[11:23]
        delay = start.get("delay_seconds")
        shown.append(f"{slot} " + ("not started" if delay is None else f"+{delay * 1000:.0f} ms"))
    return "\n".join(shown)


def job_options(command: F) -> F:
    for option in reversed(
        [
            click.option("--handler", default=None, help="Registered handler name."),
            click.option("--payload", default=None, help="JSON payload."),
            click.option("--cron", default=None, help="Cron expression (5 or 6 fields)."),
            click.option("--interval", type=float, default=None, help="Every N seconds."),
            click.option("--at", "at", default=None, help="Once, at this ISO 8601 instant."),
            click.option("--tz", "timezone", default=None, help="IANA time zone (cron)."),
            click.option("--queue", default=None),
            click.option("--priority", type=int, default=None),
            click.option("--max-attempts", type=int, default=None),
            click.option("--timeout", type=float, default=None, help="Seconds per attempt."),
            click.option("--misfire", default=None, help="fire_now, skip or run_all."),
            click.option("--overlap", default=None, help="allow, skip or buffer_one."),
        ]
    ):
        command = option(command)
    return command


def _job_fields(options: dict[str, Any]) -> dict[str, Any]:
    renamed = {"interval": "interval_seconds", "timeout": "timeout_seconds"}
    fields = {renamed.get(k, k): v for k, v in options.items() if v is not None}
    if "payload" in fields:
        fields["payload"] = _json_arg("--payload", fields["payload"])
    return fields


@jobs.command("create")
@click.argument("name")
@api_options
@click.option("--namespace", default="default", show_default=True)
@click.option("--parameters", default=None, help="A template's JSON Schema of the payload.")
@job_options
def jobs_create(
    name: str,
    url: str | None,
    token: str | None,
    as_json: bool,
    namespace: str,
    parameters: str | None,
    **options: Any,
) -> None:
    """Create a job (manual, or with --cron / --interval / --at); with --parameters, a
    template whose payload (and each trigger's) is checked and filled with defaults."""
    fields = _job_fields(options)
    if parameters is not None:
        fields["parameters"] = _json_arg("--parameters", parameters)
    if "handler" not in fields:
        _fail("--handler is required to create a job", code=2)
    with _client(url, token) as client:
        job = client.create_job({"name": name, "namespace": namespace, **fields})
    _print_json(job) if as_json else click.echo(f"{name}: created ({job['schedule']})")


@jobs.command("update")
@click.argument("name")
@api_options
@click.option("--namespace", default="default", show_default=True)
@job_options
def jobs_update(
    name: str, url: str | None, token: str | None, as_json: bool, namespace: str, **options: Any
) -> None:
    """Change some fields of a job."""
    fields = _job_fields(options)
    if not fields:
        _fail("nothing to change: give at least one option", code=2)
    with _client(url, token) as client:
        job = client.update_job(name, fields, namespace)
    _print_json(job) if as_json else click.echo(f"{name}: updated ({job['schedule']})")


@jobs.command("delete")
@click.argument("name")
@api_options
@click.option("--namespace", default="default", show_default=True)
def jobs_delete(
    name: str, url: str | None, token: str | None, as_json: bool, namespace: str
) -> None:
    """Delete a job (its runs stay)."""
    with _client(url, token) as client:
        client.delete_job(name, namespace)
    _print_json({"deleted": name}) if as_json else click.echo(f"{name}: deleted")


def _pause_command(paused: bool) -> Callable[..., None]:
    def command(
        name: str, url: str | None, token: str | None, as_json: bool, namespace: str
    ) -> None:
        with _client(url, token) as client:
            job = client.set_paused(name, paused, namespace)
        if as_json:
            _print_json(job)
        else:
            state = "paused" if job["paused"] else f"resumed; next fire {job['next_fire_at']}"
            click.echo(f"{name}: {state}")

    return command


for _verb, _paused in (("pause", True), ("resume", False)):
    jobs.command(_verb, help=f"{_verb.capitalize()} a job's schedule.")(
        click.argument("name")(
            api_options(
                click.option("--namespace", default="default", show_default=True)(
                    _pause_command(_paused)
                )
            )
        )
    )


@jobs.command("trigger")
@click.argument("name")
@api_options
@click.option("--namespace", default="default", show_default=True)
@click.option("--payload", default=None, help="JSON payload for this run only.")
@click.option("--idempotency-key", default=None, help="Retrying with it returns the same run.")
@click.option("--wait", type=float, default=None, help="Wait up to N s for the run to end.")
def jobs_trigger(
    name: str,
    url: str | None,
    token: str | None,
    as_json: bool,
    namespace: str,
    payload: str | None,
    idempotency_key: str | None,
    wait: float | None,
) -> None:
    """Run a job now; prints the run id (with --wait, its final state too)."""
    with _client(url, token) as client:
        run_id = client.trigger(
            name,
            _json_arg("--payload", payload),
            namespace=namespace,
            idempotency_key=idempotency_key,
        )
        run = _wait_for(client, run_id, wait) if wait else None
    if as_json:
        _print_json({"run_id": run_id, "run": run})
    elif run is None:
        click.echo(run_id)
    else:
        click.echo(f"{run_id} {run['state']}")
    if run is not None and run["state"] != "succeeded":
        sys.exit(1)


def _wait_for(client: RotaClient, run_id: int, seconds: float) -> dict[str, Any]:
    try:
        return client.wait_for(run_id, timeout=seconds)
    except RunNotFinished as exc:
        _fail(str(exc))


# -- runs -----------------------------------------------------------------------------
@click.group()
def runs() -> None:
    """Runs: list, show, logs, cancel, requeue."""


def run_filters(command: F) -> F:
    for option in reversed(
        [
            click.option("--state", multiple=True, help="Repeat for several states."),
            click.option("--job", default=None),
            click.option("--namespace", default=None),
            click.option("--handler", default=None),
            click.option("--queue", default=None),
            click.option("--tag", default=None),
            click.option("--search", "q", default=None, help="Text in handler, job or error."),
            click.option("--limit", type=int, default=20, show_default=True),
            click.option("--cursor", default=None, help="next_cursor of the previous page."),
        ]
    ):
        command = option(command)
    return command


def _run_rows(page: dict[str, Any]) -> None:
    _table(
        ["id", "namespace", "handler", "state", "attempt", "worker", "created (UTC)", "error"],
        [
            [
                r["id"],
                r["namespace"],
                r["handler"],
                r["state"],
                f"{r['attempt']}/{r['max_attempts']}",
                r["worker_id"],
                r["created_at"][:19],
                (r["error"] or "")[:60],
            ]
            for r in page["items"]
        ],
    )
    if page.get("next_cursor"):
        console.print(f"more: --cursor {page['next_cursor']}")


@runs.command("list")
@api_options
@run_filters
def runs_list(url: str | None, token: str | None, as_json: bool, **filters: Any) -> None:
    """Runs, newest first."""
    filters["state"] = list(filters["state"])
    with _client(url, token) as client:
        page = client.list_runs(**filters)
    _print_json(page) if as_json else _run_rows(page)


@runs.command("show")
@click.argument("run_id", type=int)
@api_options
def runs_show(run_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """One run with its attempts."""
    with _client(url, token) as client:
        detail = client.get_run(run_id)
    if as_json:
        _print_json(detail)
        return
    r = detail["run"]
    console.print(
        f"[bold]run {r['id']}[/] {r['handler']} [bold]{r['state']}[/] "
        f"attempt {r['attempt']}/{r['max_attempts']} fence {r['fence']}"
    )
    if r["error"]:
        console.print(f"error: {r['error']}")
    _table(
        ["attempt", "fence", "worker", "outcome", "duration s", "error"],
        [
            [
                a["attempt"],
                a["fence"],
                a["worker_id"],
                a["outcome"],
                f"{a['duration_seconds']:.3f}" if a["duration_seconds"] is not None else "",
                (a["error"] or "")[:60],
            ]
            for a in detail["attempts"]
        ],
    )


@runs.command("logs")
@click.argument("run_id", type=int)
@api_options
def runs_logs(run_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """The lines a run's handler logged."""
    with _client(url, token) as client:
        lines = client.run_logs(run_id)
    if as_json:
        _print_json(lines)
        return
    for line in lines:
        fields = " ".join(f"{k}={v}" for k, v in line["fields"].items())
        stamp = line["at"][11:19]
        click.echo(f"{stamp} #{line['attempt']} {line['level']:7} {line['message']} {fields}")


@runs.command("cancel")
@click.argument("run_id", type=int)
@api_options
def runs_cancel(run_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """Cancel a waiting run, or ask a running one to stop."""
    with _client(url, token) as client:
        run = client.cancel_run(run_id)
    if as_json:
        _print_json(run)
    else:
        asked = " (cancel requested)" if run["cancel_requested"] else ""
        click.echo(f"run {run['id']}: {run['state']}{asked}")


@runs.command("requeue")
@click.argument("run_id", type=int)
@api_options
def runs_requeue(run_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """Run a finished run again as a fresh run; prints the new run's id."""
    with _client(url, token) as client:
        new_id = client.requeue_run(run_id)
    _print_json({"run_id": run_id, "new_run_id": new_id}) if as_json else click.echo(new_id)


# -- dead-letter queue ----------------------------------------------------------------
@click.group()
def dlq() -> None:
    """The dead-letter queue: runs that spent their attempts."""


@dlq.command("list")
@api_options
@run_filters
def dlq_list(url: str | None, token: str | None, as_json: bool, **filters: Any) -> None:
    """Dead-lettered runs, newest first."""
    filters.pop("state")
    with _client(url, token) as client:
        page = client.list_dead(**filters)
    _print_json(page) if as_json else _run_rows(page)


@dlq.command("replay")
@click.argument("run_ids", type=int, nargs=-1, required=True)
@api_options
def dlq_replay(run_ids: tuple[int, ...], url: str | None, token: str | None, as_json: bool) -> None:
    """Replay dead runs as fresh runs; prints old -> new ids."""
    with _client(url, token) as client:
        results = client.replay_dead(list(run_ids))
    if as_json:
        _print_json(results)
        return
    for result in results:
        outcome = result["new_run_id"] or f"not replayed: {result['error']}"
        click.echo(f"{result['run_id']} -> {outcome}")
    if any(r["new_run_id"] is None for r in results):
        sys.exit(1)


# -- workers --------------------------------------------------------------------------
@click.group()
def workers() -> None:
    """Workers in the registry."""


@workers.command("list")
@api_options
def workers_list(url: str | None, token: str | None, as_json: bool) -> None:
    """Workers with their state and heartbeat age."""
    with _client(url, token) as client:
        items = client.list_workers()
    if as_json:
        _print_json(items)
        return
    _table(
        ["node", "state", "host", "pid", "queues", "concurrency", "heartbeat age s"],
        [
            [
                w["node_id"],
                w["state"],
                w["host"],
                w["pid"],
                ",".join(w["queues"]),
                w["concurrency"],
                f"{w['heartbeat_age_seconds']:.1f}"
                if w["heartbeat_age_seconds"] is not None
                else "",
            ]
            for w in items
        ],
    )


@workers.command("drain")
@click.argument("node_id")
@api_options
def workers_drain(node_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Stop a worker claiming; it finishes what it holds."""
    with _client(url, token) as client:
        worker = client.drain_worker(node_id)
    _print_json(worker) if as_json else click.echo(f"{node_id}: {worker['state']}")


@workers.command("resume")
@click.argument("node_id")
@api_options
def workers_resume(node_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Let a drained worker claim again."""
    with _client(url, token) as client:
        worker = client.resume_worker(node_id)
    _print_json(worker) if as_json else click.echo(f"{node_id}: {worker['state']}")


# -- tokens ---------------------------------------------------------------------------
@click.group()
def token() -> None:
    """Development tokens (the server offers them only outside production)."""


@token.command("create")
@api_options
@click.option("--subject", default="dev", show_default=True)
@click.option("--role", default="admin", show_default=True, help="viewer, operator or admin.")
@click.option("--scope", "scopes", multiple=True, help="Extra scopes (repeatable).")
@click.option("--namespace", "namespaces", multiple=True, help="Repeatable; default: all (*).")
@click.option("--ttl", type=int, default=3600, show_default=True, help="Seconds.")
def token_create(
    url: str | None,
    token: str | None,
    as_json: bool,
    subject: str,
    role: str,
    scopes: tuple[str, ...],
    namespaces: tuple[str, ...],
    ttl: int,
) -> None:
    """Ask the server for a signed dev token; prints it (use: export ROTA_TOKEN=$(...))."""
    with _client(url, None, anonymous=True) as client:
        server_url = client.url
        answer = client.dev_token(
            subject=subject,
            role=role or None,
            scopes=list(scopes),
            namespaces=list(namespaces) or ["*"],
            ttl_seconds=ttl,
        )
    access_token = answer.get("access_token") if isinstance(answer, dict) else None
    if not isinstance(access_token, str) or not access_token:
        # `export ROTA_TOKEN=$(rota token create)` must not quietly export nothing.
        _fail(f"{server_url} answered without a token (is it a rota server in development mode?)")
    _print_json(answer) if as_json else click.echo(access_token)


# -- the server -----------------------------------------------------------------------
@click.command()
@click.option("--app", "app_target", default=None, help="MODULE:ATTRIBUTE of your rota.App.")
@app_dir_option
@click.option("--db", envvar="ROTA_DATABASE_URL", default=None, help="Database URL.")
@click.option("--host", default=None, help=f"Address to listen on (default {DEFAULT_HOST}).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=None, help=f"(default {DEFAULT_PORT})"
)
@click.option("--no-worker", is_flag=True, help="Serve the API only; work no runs here.")
@click.option("--no-leader", is_flag=True, help="Never stand for leader on this node.")
@click.option("--concurrency", type=int, default=None, help="The embedded worker's (default 8).")
@click.option("--node-id", default=None, help="Unique node name (default HOST-PID).")
@click.option(
    "--dev",
    is_flag=True,
    help="Development mode (as ROTA_ENV=development): POST /dev/token, the public "
    "development key if ROTA_JWT_SECRET is unset; loopback addresses only.",
)
@tls_options
def server(
    app_target: str | None,
    app_dir: str,
    db: str | None,
    host: str | None,
    port: int | None,
    no_worker: bool,
    no_leader: bool,
    concurrency: int | None,
    node_id: str | None,
    dev: bool,
    tls_cert: str | None,
    tls_key: str | None,
    tls_ca: str | None,
) -> None:
    """Serve the HTTP API, with an embedded worker and leader. Production unless
    ROTA_ENV or --dev says otherwise: then ROTA_JWT_SECRET is required. Each option may
    also come from ROTA_* or the configuration file (server.*, tls.*)."""
    from rota.api.settings import ApiSettings
    from rota.app import App
    from rota.cli.app_loader import load_app
    from rota.errors import StoreUnavailable
    from rota.server import ServerFailed, serve

    found = sources()
    try:
        tls = server_tls(found, tls_cert, tls_key, tls_ca)
        rota_app = load_app(app_target, app_dir) if app_target else App()
        if db:
            rota_app.settings = rota_app.settings.with_overrides(database_url=db)
        settings = ApiSettings.from_env(
            embedded_worker=False if no_worker else _on_unless_off(found, "server.embedded_worker"),
            embedded_leader=False if no_leader else _on_unless_off(found, "server.embedded_leader"),
            worker_concurrency=concurrency,
            node_id=setting(found, "node_id", node_id),
            env="development" if dev else None,
        )
        host_name = setting(found, "host", host)
        serve(rota_app, settings, host_name, setting(found, "port", port), "info", tls)
    except StoreUnavailable as exc:
        _fail(str(exc), code=3)
    except (RotaError, ServerFailed) as exc:
        _fail(str(exc), code=2)


def _on_unless_off(found: Any, key: str) -> bool:
    """An embedded duty: on, unless ROTA_* or the file turns it off."""
    return found.value(key) is not False


COMMANDS = (jobs, runs, dlq, workers, token, server)
