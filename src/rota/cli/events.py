"""``rota events publish|list|subscribe|unsubscribe|subscriptions``: events through the
HTTP API (publishing needs events:write; ADR 0023)."""

from __future__ import annotations

from typing import Any

import click

from rota.cli.api_client import api_client, api_options, namespace_option
from rota.cli.errors import json_arg
from rota.cli.output import print_json, table


@click.group()
def events() -> None:
    """Events: publish them, list them, and subscribe jobs to them."""


def _event_rows(items: list[dict[str, Any]]) -> None:
    table(
        ["id", "namespace", "name", "event id", "published", "runs"],
        [
            [
                e["id"],
                e["namespace"],
                e["name"],
                e["event_id"],
                e["published_at"],
                e["runs_created"],
            ]
            for e in items
        ],
    )


@events.command("publish")
@click.argument("name")
@api_options
@click.option("--payload", default=None, help="The payload, as JSON.")
@click.option("--id", "event_id", default=None, help="The event's id (the same id: no new run).")
@namespace_option
def events_publish(
    name: str,
    url: str | None,
    token: str | None,
    as_json: bool,
    payload: str | None,
    event_id: str | None,
    namespace: str,
) -> None:
    """Publish an event; every subscribed job whose filter matches runs once."""
    with api_client(url, token) as client:
        published = client.publish_event(name, json_arg("--payload", payload), event_id, namespace)
    if as_json:
        print_json(published)
        return
    event = published["event"]
    if published["created"]:
        runs = ", ".join(str(r) for r in published["run_ids"]) or "none"
        click.echo(f"published {event['name']} id={event['event_id']}: runs {runs}")
    else:
        click.echo(f"already published {event['name']} id={event['event_id']}: nothing new")


@events.command("list")
@api_options
@click.option("--name", default=None, help="Only events of this name.")
@click.option("--namespace", default=None, help="Only this namespace.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 200))
@click.option("--cursor", default=None, help="next_cursor of a previous page.")
def events_list(
    url: str | None,
    token: str | None,
    as_json: bool,
    name: str | None,
    namespace: str | None,
    limit: int,
    cursor: str | None,
) -> None:
    """Published events, newest first."""
    with api_client(url, token) as client:
        page = client.list_events(name, namespace, limit, cursor)
    if as_json:
        print_json(page)
        return
    _event_rows(page["items"])
    if page["next_cursor"]:
        click.echo(f"more: --cursor {page['next_cursor']}")


@events.command("subscribe")
@click.argument("event")
@click.argument("job", required=False)
@api_options
@click.option("--workflow", default=None, help="Start this workflow instead of a job.")
@click.option("--where", default=None, help='A filter as JSON, e.g. {"customer.tier": "gold"}.')
@namespace_option
def events_subscribe(
    event: str,
    job: str | None,
    url: str | None,
    token: str | None,
    as_json: bool,
    workflow: str | None,
    where: str | None,
    namespace: str,
) -> None:
    """Run JOB (or start --workflow) once per EVENT whose payload matches --where
    (again: replace it)."""
    with api_client(url, token) as client:
        event_filter = json_arg("--where", where)
        made = client.subscribe(event, job, event_filter, namespace, workflow)
    if as_json:
        print_json(made)
        return
    target = f"job {made['job']}" if made["job"] else f"workflow {made['workflow']}"
    click.echo(f"{target} runs on {made['event']} where {made['filter'] or 'always'}")


@events.command("unsubscribe")
@click.argument("event")
@click.argument("job", required=False)
@api_options
@click.option("--workflow", default=None, help="Unsubscribe this workflow instead of a job.")
@namespace_option
def events_unsubscribe(
    event: str,
    job: str | None,
    url: str | None,
    token: str | None,
    as_json: bool,
    workflow: str | None,
    namespace: str,
) -> None:
    """JOB (or --workflow) no longer runs on EVENT."""
    with api_client(url, token) as client:
        client.unsubscribe(event, job, namespace, workflow)
    click.echo(f"{job or workflow} no longer runs on {event}")


@events.command("subscriptions")
@api_options
def events_subscriptions(url: str | None, token: str | None, as_json: bool) -> None:
    """Which jobs run on which events."""
    with api_client(url, token) as client:
        found = client.list_event_subscriptions()
    if as_json:
        print_json(found)
        return
    table(
        ["namespace", "event", "job / workflow", "filter"],
        [
            [
                s["namespace"],
                s["event"],
                s["job"] or f"workflow {s['workflow']}",
                s["filter"] or "-",
            ]
            for s in found
        ],
    )
