"""``rota workflows list|show|cancel``: workflow runs through the HTTP API, the graph as
Mermaid, Graphviz dot or text. (Creating and starting definitions from the
CLI is not built yet: README "Status".)"""

from __future__ import annotations

import click

from rota.cli_api import _client, _print_json, _table, api_options
from rota.domain.workflow_graph import FORMATS, render


@click.group()
def workflows() -> None:
    """Workflow runs: their state and graph."""


@workflows.command("list")
@api_options
@click.option("--name", default=None, help="Only runs of this workflow.")
@click.option("--limit", default=50, show_default=True, type=int)
def workflows_list(
    url: str, token: str | None, as_json: bool, name: str | None, limit: int
) -> None:
    """The newest workflow runs."""
    with _client(url, token) as client:
        found = client.list_workflow_runs(name, limit)
    if as_json:
        _print_json(found)
        return
    _table(
        ["id", "workflow", "started", "cancelled"],
        [[r["id"], r["name"], r["created_at"], r["cancelled_at"]] for r in found],
    )


@workflows.command("show")
@click.argument("workflow_run_id", type=int)
@api_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
def workflows_show(
    workflow_run_id: int, url: str, token: str | None, as_json: bool, fmt: str
) -> None:
    """A workflow run's steps, their states and edges."""
    with _client(url, token) as client:
        graph = client.workflow_run_graph(workflow_run_id)
    if as_json:
        _print_json(graph)
        return
    click.echo(render(graph, fmt))


@workflows.command("cancel")
@click.argument("workflow_run_id", type=int)
@api_options
def workflows_cancel(workflow_run_id: int, url: str, token: str | None, as_json: bool) -> None:
    """Cancel every unfinished step of a workflow run."""
    with _client(url, token) as client:
        view = client.cancel_workflow_run(workflow_run_id)
    if as_json:
        _print_json(view)
        return
    click.echo(f"workflow run {workflow_run_id}: {view['state']}")
