"""``rota workflows``: definitions (create from a JSON file, list, show, start) and
workflow runs (runs, show RUN as Mermaid, Graphviz dot or text, cancel), all through
the HTTP API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rota.cli.api_client import api_client, api_options, namespace_option
from rota.cli.errors import fail, json_arg
from rota.cli.output import print_json, table
from rota.domain.workflow_graph import FORMATS, render


@click.group()
def workflows() -> None:
    """Workflow definitions and workflow runs: their state and graph."""


def _definition_file(path: Path, namespace: str | None) -> dict[str, Any]:
    try:
        definition = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"--file {str(path)!r} is not a readable JSON file: {exc}", code=2)
    if not isinstance(definition, dict):
        fail(
            f"--file {str(path)!r} holds {type(definition).__name__}; expected an object "
            "with name and steps",
            code=2,
        )
    if namespace is not None:
        definition["namespace"] = namespace
    return definition


@workflows.command("create")
@click.option(
    "--file",
    "path",
    required=True,
    type=click.Path(path_type=Path),
    help='A JSON definition: {"name": ..., "steps": [...]}.',
)
@click.option("--namespace", default=None, help="Overrides the file's namespace.")
@api_options
def workflows_create(
    path: Path, namespace: str | None, url: str | None, token: str | None, as_json: bool
) -> None:
    """Save a workflow definition (checked by the server; a name taken is replaced)."""
    definition = _definition_file(path, namespace)
    with api_client(url, token) as client:
        saved = client.save_workflow(definition)
    if as_json:
        print_json(saved)
        return
    click.echo(f"{saved['namespace']}/{saved['name']}: version {saved['version']}")


@workflows.command("list")
@api_options
@click.option("--namespace", default=None, help="Only this namespace.")
def workflows_list(
    url: str | None, token: str | None, as_json: bool, namespace: str | None
) -> None:
    """The saved workflow definitions."""
    with api_client(url, token) as client:
        found = client.list_workflows(namespace)
    if as_json:
        print_json(found)
        return
    table(
        ["namespace", "name", "version", "steps", "updated"],
        [
            [w["namespace"], w["name"], w["version"], len(w["steps"]), w["updated_at"]]
            for w in found
        ],
    )


@workflows.command("start")
@click.argument("name")
@click.option("--payload", default=None, help="JSON payload (ctx.workflow_payload).")
@namespace_option
@api_options
def workflows_start(
    name: str,
    payload: str | None,
    namespace: str,
    url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Start a run of a saved workflow; prints the workflow run's id."""
    value = json_arg("--payload", payload)
    with api_client(url, token) as client:
        workflow_run_id = client.start_workflow(name, value, namespace)
    if as_json:
        print_json({"workflow_run_id": workflow_run_id})
        return
    click.echo(workflow_run_id)


@workflows.command("runs")
@api_options
@click.option("--name", default=None, help="Only runs of this workflow.")
@click.option("--namespace", default=None, help="Only runs in this namespace.")
@click.option("--limit", default=50, show_default=True, type=int)
def workflows_runs(
    url: str | None,
    token: str | None,
    as_json: bool,
    name: str | None,
    namespace: str | None,
    limit: int,
) -> None:
    """The newest workflow runs."""
    with api_client(url, token) as client:
        found = client.list_workflow_runs(name, limit, namespace)
    if as_json:
        print_json(found)
        return
    table(
        ["id", "namespace", "workflow", "started", "cancelled"],
        [[r["id"], r["namespace"], r["name"], r["created_at"], r["cancelled_at"]] for r in found],
    )


@workflows.command("show")
@click.argument("target")
@namespace_option
@api_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
def workflows_show(
    target: str, namespace: str, url: str | None, token: str | None, as_json: bool, fmt: str
) -> None:
    """A workflow run's steps, states and edges (TARGET is a run id: only digits), or a
    saved definition (TARGET is its name; a workflow's name is never only digits)."""
    with api_client(url, token) as client:
        if not (target.isascii() and target.isdigit()):
            definition = client.get_workflow(target, namespace)
            if as_json:
                print_json(definition)
                return
            click.echo(
                f"{definition['namespace']}/{definition['name']} (version {definition['version']})"
            )
            for step in definition["steps"]:
                parents = step["after"] + ([step["over"]] if step["over"] else [])
                after = f"  (after {', '.join(parents)})" if parents else ""
                click.echo(f"  {step['name']}: {step['kind']} {step['handler']}{after}")
            return
        graph = client.workflow_run_graph(int(target))
    if as_json:
        print_json(graph)
        return
    click.echo(render(graph, fmt))


@workflows.command("cancel")
@click.argument("workflow_run_id", type=int)
@api_options
def workflows_cancel(
    workflow_run_id: int, url: str | None, token: str | None, as_json: bool
) -> None:
    """Cancel every unfinished step of a workflow run."""
    with api_client(url, token) as client:
        view = client.cancel_workflow_run(workflow_run_id)
    if as_json:
        print_json(view)
        return
    click.echo(f"workflow run {workflow_run_id}: {view['state']}")
