"""``rota workers list|drain|resume``: the worker registry through the HTTP API."""

from __future__ import annotations

import click

from rota.cli.api_client import api_client, api_options
from rota.cli.output import print_json, table


@click.group()
def workers() -> None:
    """Workers in the registry."""


@workers.command("list")
@api_options
def workers_list(url: str | None, token: str | None, as_json: bool) -> None:
    """Workers with their state and heartbeat age."""
    with api_client(url, token) as client:
        items = client.list_workers()
    if as_json:
        print_json(items)
        return
    table(
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
    with api_client(url, token) as client:
        worker = client.drain_worker(node_id)
    print_json(worker) if as_json else click.echo(f"{node_id}: {worker['state']}")


@workers.command("resume")
@click.argument("node_id")
@api_options
def workers_resume(node_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Let a drained worker claim again."""
    with api_client(url, token) as client:
        worker = client.resume_worker(node_id)
    print_json(worker) if as_json else click.echo(f"{node_id}: {worker['state']}")
