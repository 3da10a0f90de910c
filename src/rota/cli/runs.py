"""``rota runs ...``: runs through the HTTP API: list, show, logs, cancel, requeue. Its
table serves ``rota dlq list`` too; the filters are rota.cli.run_filters."""

from __future__ import annotations

from typing import Any

import click

from rota.cli.api_client import api_client, api_options
from rota.cli.output import console, print_json, table
from rota.cli.run_filters import filter_values, run_filters


@click.group()
def runs() -> None:
    """Runs: list, show, logs, cancel, requeue."""


RUN_COLUMNS = (
    *("id", "namespace", "handler", "owner", "state"),
    *("attempt", "worker", "created (UTC)", "error"),
)
OWNER = RUN_COLUMNS.index("owner")


def run_rows(page: dict[str, Any]) -> None:
    rows = [
        [
            r["id"],
            r["namespace"],
            r["handler"],
            r.get("owner") or "",
            r["state"],
            f"{r['attempt']}/{r['max_attempts']}",
            r["worker_id"],
            r["created_at"][:19],
            (r["error"] or "")[:60],
        ]
        for r in page["items"]
    ]
    columns = list(RUN_COLUMNS)
    if not any(row[OWNER] for row in rows):
        # No run here has an owner: no column for it, so a narrow terminal keeps the
        # state and the rest readable.
        del columns[OWNER]
        for row in rows:
            del row[OWNER]
    table(columns, rows)
    if page.get("next_cursor"):
        console.print(f"more: --cursor {page['next_cursor']}")


@runs.command("list")
@api_options
@run_filters
def runs_list(url: str | None, token: str | None, as_json: bool, **filters: Any) -> None:
    """Runs, newest first."""
    with api_client(url, token) as client:
        page = client.list_runs(**filter_values(filters))
    print_json(page) if as_json else run_rows(page)


@runs.command("show")
@click.argument("run_id", type=int)
@api_options
def runs_show(run_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """One run with its attempts."""
    with api_client(url, token) as client:
        detail = client.get_run(run_id)
    if as_json:
        print_json(detail)
        return
    r = detail["run"]
    console.print(
        f"[bold]run {r['id']}[/] {r['handler']} [bold]{r['state']}[/] "
        f"attempt {r['attempt']}/{r['max_attempts']} fence {r['fence']}"
    )
    if r.get("owner") or r.get("labels"):
        labels = ", ".join(f"{k}={v}" for k, v in (r.get("labels") or {}).items())
        console.print(f"owner: {r.get('owner') or '-'}  labels: {labels or '-'}", markup=False)
    if r["error"]:
        console.print(f"error: {r['error']}")
    table(
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
    with api_client(url, token) as client:
        lines = client.run_logs(run_id)
    if as_json:
        print_json(lines)
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
    with api_client(url, token) as client:
        run = client.cancel_run(run_id)
    if as_json:
        print_json(run)
    else:
        asked = " (cancel requested)" if run["cancel_requested"] else ""
        click.echo(f"run {run['id']}: {run['state']}{asked}")


@runs.command("requeue")
@click.argument("run_id", type=int)
@api_options
def runs_requeue(run_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """Run a finished run again as a fresh run; prints the new run's id."""
    with api_client(url, token) as client:
        new_id = client.requeue_run(run_id)
    print_json({"run_id": run_id, "new_run_id": new_id}) if as_json else click.echo(new_id)
