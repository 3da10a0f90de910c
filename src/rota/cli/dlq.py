"""``rota dlq list|replay``: the dead-letter queue through the HTTP API."""

from __future__ import annotations

import sys
from typing import Any

import click

from rota.cli.api_client import api_client, api_options
from rota.cli.output import print_json
from rota.cli.run_filters import filter_values, run_filters
from rota.cli.runs import run_rows


@click.group()
def dlq() -> None:
    """The dead-letter queue: runs that spent their attempts."""


@dlq.command("list")
@api_options
@run_filters
def dlq_list(url: str | None, token: str | None, as_json: bool, **filters: Any) -> None:
    """Dead-lettered runs, newest first."""
    filters = filter_values(filters)
    filters.pop("state")
    with api_client(url, token) as client:
        page = client.list_dead(**filters)
    print_json(page) if as_json else run_rows(page)


@dlq.command("replay")
@click.argument("run_ids", type=int, nargs=-1, required=True)
@api_options
def dlq_replay(run_ids: tuple[int, ...], url: str | None, token: str | None, as_json: bool) -> None:
    """Replay dead runs as fresh runs; prints old -> new ids."""
    with api_client(url, token) as client:
        results = client.replay_dead(list(run_ids))
    if as_json:
        print_json(results)
        return
    for result in results:
        outcome = result["new_run_id"] or f"not replayed: {result['error']}"
        click.echo(f"{result['run_id']} -> {outcome}")
    if any(r["new_run_id"] is None for r in results):
        sys.exit(1)
