"""``rota jobs ...`` (also ``rota schedules ...``): jobs through the HTTP API: list, show,
create, update, delete, pause, resume and trigger (``rota jobs backfill``:
rota.cli.backfill)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from rota.cli.api_client import F, api_client, api_options, namespace_option
from rota.cli.errors import fail, json_arg
from rota.cli.output import print_json, table
from rota.cli.run_filters import label_filter
from rota.client import RotaClient, RunNotFinished


@click.group()
def jobs() -> None:
    """Jobs: a handler + payload + options + an optional schedule."""


def _job_rows(items: list[dict[str, Any]]) -> None:
    table(
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
@click.option("--owner", default=None, help="Only this owner's jobs.")
@click.option("--label", "labels", multiple=True, help="key=value; repeat: all must match.")
def jobs_list(
    url: str | None,
    token: str | None,
    as_json: bool,
    namespace: str | None,
    owner: str | None,
    labels: tuple[str, ...],
) -> None:
    """Every job you can see (of one owner, with some labels)."""
    wanted = label_filter(labels)
    with api_client(url, token) as client:
        items = client.list_jobs(namespace, owner=owner, labels=wanted)
    print_json(items) if as_json else _job_rows(items)


@jobs.command("show")
@click.argument("name")
@api_options
@namespace_option
def jobs_show(name: str, url: str | None, token: str | None, as_json: bool, namespace: str) -> None:
    """One job."""
    with api_client(url, token) as client:
        job = client.get_job(name, namespace)
    if as_json:
        print_json(job)
        return
    starts = job.pop("recent_starts", [])
    table(
        ["field", "value"],
        [[k, json.dumps(v) if isinstance(v, dict | list) else v] for k, v in job.items()]
        + [["recent starts", _starts(starts)]],
    )


def _starts(starts: list[dict[str, Any]]) -> str:
    """Each recent slot, what became of it and how late its run started:
    "12:00:02 succeeded +4 ms", "12:00:04 skipped (previous run still live)"."""
    if not starts:
        return "none yet"
    shown = []
    for start in starts:
        slot = str(start["slot_at"])[11:23]
        delay = start.get("delay_seconds")
        said = f"{slot} {start.get('outcome', '')}".rstrip()
        if delay is not None:
            said += f" +{delay * 1000:.0f} ms"
        if start.get("reason"):
            said += f" ({start['reason']})"
        shown.append(said)
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
            click.option("--owner", default=None, help="Its runs' owner (a team); '' for none."),
            click.option(
                "--label", "labels", multiple=True, help="key=value (its runs'); repeatable."
            ),
        ]
    ):
        command = option(command)
    return command


def _job_fields(options: dict[str, Any]) -> dict[str, Any]:
    renamed = {"interval": "interval_seconds", "timeout": "timeout_seconds"}
    clear_labels = options.pop("clear_labels", False)
    fields = {renamed.get(k, k): v for k, v in options.items() if v is not None}
    # --owner '' is no owner: JSON null, which an update takes as "clear it".
    if fields.get("owner") == "":
        fields["owner"] = None
    # No --label leaves the labels as they are (on update); given, they replace them;
    # --clear-labels sends none ({}).
    if clear_labels and fields.get("labels"):
        fail("--clear-labels and --label contradict each other: give one of them", code=2)
    if fields.get("labels"):
        fields["labels"] = label_filter(fields["labels"])
    elif clear_labels:
        fields["labels"] = {}
    else:
        fields.pop("labels", None)
    if "payload" in fields:
        fields["payload"] = json_arg("--payload", fields["payload"])
    return fields


@jobs.command("create")
@click.argument("name")
@api_options
@namespace_option
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
        fields["parameters"] = json_arg("--parameters", parameters)
    if "handler" not in fields:
        fail("--handler is required to create a job", code=2)
    with api_client(url, token) as client:
        job = client.create_job({"name": name, "namespace": namespace, **fields})
    print_json(job) if as_json else click.echo(f"{name}: created ({job['schedule']})")


@jobs.command("update")
@click.argument("name")
@api_options
@namespace_option
@job_options
@click.option("--clear-labels", is_flag=True, help="Remove every label (its next runs').")
def jobs_update(
    name: str, url: str | None, token: str | None, as_json: bool, namespace: str, **options: Any
) -> None:
    """Change some fields of a job (--owner '' and --clear-labels remove its owner and
    labels)."""
    fields = _job_fields(options)
    if not fields:
        fail("nothing to change: give at least one option", code=2)
    with api_client(url, token) as client:
        job = client.update_job(name, fields, namespace)
    print_json(job) if as_json else click.echo(f"{name}: updated ({job['schedule']})")


@jobs.command("delete")
@click.argument("name")
@api_options
@namespace_option
def jobs_delete(
    name: str, url: str | None, token: str | None, as_json: bool, namespace: str
) -> None:
    """Delete a job (its runs stay)."""
    with api_client(url, token) as client:
        client.delete_job(name, namespace)
    print_json({"deleted": name}) if as_json else click.echo(f"{name}: deleted")


def _pause_command(paused: bool) -> Callable[..., None]:
    def command(
        name: str, url: str | None, token: str | None, as_json: bool, namespace: str
    ) -> None:
        with api_client(url, token) as client:
            job = client.set_paused(name, paused, namespace)
        if as_json:
            print_json(job)
        else:
            state = "paused" if job["paused"] else f"resumed; next fire {job['next_fire_at']}"
            click.echo(f"{name}: {state}")

    return command


for _verb, _paused in (("pause", True), ("resume", False)):
    jobs.command(_verb, help=f"{_verb.capitalize()} a job's schedule.")(
        click.argument("name")(api_options(namespace_option(_pause_command(_paused))))
    )


@jobs.command("trigger")
@click.argument("name")
@api_options
@namespace_option
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
    with api_client(url, token) as client:
        run_id = client.trigger(
            name,
            json_arg("--payload", payload),
            namespace=namespace,
            idempotency_key=idempotency_key,
        )
        run = _wait_for(client, run_id, wait) if wait else None
    if as_json:
        print_json({"run_id": run_id, "run": run})
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
        fail(str(exc), code=1)
