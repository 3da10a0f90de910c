"""``rota queues list|show|pause|resume|limit``: queues as a thing you operate, through
the HTTP API (so every change is audited and needs a cluster admin's token)."""

from __future__ import annotations

from typing import Any

import click
from rich import box
from rich.table import Table

from rota.cli.api_client import api_client, api_options
from rota.cli.errors import fail
from rota.cli.output import console, print_json


@click.group()
def queues() -> None:
    """Queues: depth, throughput, failure rate, workers; pause, resume, cap."""


def _age(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:.1f}"


def _rate(rate: float | None) -> str:
    return "" if rate is None else f"{rate:.1%}"


def _paused(queue: dict[str, Any]) -> str:
    return "yes" if queue["paused"] else "no"


def _row(q: dict[str, Any]) -> list[Any]:
    depth = q["depth"]
    return [
        q["name"],
        _paused(q),
        depth["pending"] + depth["retrying"],
        depth["claimed"] + depth["running"],
        _age(q["oldest_due_age_seconds"]),
        f"{q['throughput_per_minute']:.2f}",
        _rate(q["failure_rate"]),
        "" if q["concurrency_limit"] is None else q["concurrency_limit"],
        len(q["workers"]),
    ]


COLUMNS = [
    "queue",
    "paused",
    "waiting",
    "running",
    "due age s",
    "per min",
    "failed",
    "limit",
    "workers",
]


def _table(columns: list[str], rows: list[list[Any]]) -> None:
    """Light rules, and text folded, never cut: a queue's name is what a reader acts on."""
    shown = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        shown.add_column(column, overflow="fold")
    for row in rows:
        shown.add_row(*(str(cell) for cell in row))
    console.print(shown)


@queues.command("list")
@api_options
def queues_list(url: str | None, token: str | None, as_json: bool) -> None:
    """Every queue: depth by state, oldest due age, the last 15 minutes' throughput and
    failure rate, its concurrency limit and how many workers serve it."""
    with api_client(url, token) as client:
        items = client.list_queues()
    if as_json:
        print_json(items)
        return
    _table(COLUMNS, [_row(q) for q in items])


@queues.command("show")
@click.argument("name")
@api_options
def queues_show(name: str, url: str | None, token: str | None, as_json: bool) -> None:
    """One queue, with the node ids of the workers serving it."""
    with api_client(url, token) as client:
        queue = client.get_queue(name)
    if as_json:
        print_json(queue)
        return
    _table([*COLUMNS[:-1], "served by"], [[*_row(queue)[:-1], ",".join(queue["workers"])]])
    if queue["paused"]:
        click.echo(f"paused at {queue['paused_at']} by {queue['paused_by'] or 'unknown'}")


@queues.command("pause")
@click.argument("name")
@api_options
def queues_pause(name: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Stop every worker claiming NAME's runs (within about a second); runs already
    claimed finish. Kept in the database until `rota queues resume`."""
    with api_client(url, token) as client:
        queue = client.pause_queue(name)
    print_json(queue) if as_json else click.echo(f"{name}: paused")


@queues.command("resume")
@click.argument("name")
@api_options
def queues_resume(name: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Let workers claim NAME's runs again."""
    with api_client(url, token) as client:
        queue = client.resume_queue(name)
    print_json(queue) if as_json else click.echo(f"{name}: resumed")


# A negative MAX_RUNNING is an argument to refuse by name, not an unknown option.
@queues.command("limit", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("max_running")
@api_options
def queues_limit(
    name: str, max_running: str, url: str | None, token: str | None, as_json: bool
) -> None:
    """At most MAX_RUNNING of NAME's runs at once, cluster-wide, from the next claims on
    ('none' removes the cap)."""
    if max_running.strip().lower() == "none":
        wanted: int | None = None
    else:
        try:
            wanted = int(max_running)
        except ValueError:
            fail(f"invalid MAX_RUNNING: {max_running!r}; expected a whole number >= 1 or 'none'")
    with api_client(url, token) as client:
        queue = client.set_queue_limit(name, wanted)
    if as_json:
        print_json(queue)
    elif queue["concurrency_limit"] is None:
        click.echo(f"{name}: no concurrency limit")
    else:
        click.echo(f"{name}: at most {queue['concurrency_limit']} running")
