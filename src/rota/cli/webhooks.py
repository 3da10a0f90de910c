"""``rota webhooks ...``: subscriptions, delivery history and redelivery, through the
HTTP API (jobs:admin). The secret is printed once, by ``create`` and ``rotate-secret``."""

from __future__ import annotations

from typing import Any

import click

from rota.cli.api_client import api_client, api_options, namespace_option
from rota.cli.output import print_json, table
from rota.domain.webhooks import EventType

EVENT_CHOICE = click.Choice([e.value for e in EventType])


@click.group()
def webhooks() -> None:
    """Webhook subscriptions: signed POSTs on run events."""


def _rows(items: list[dict[str, Any]]) -> None:
    table(
        ["id", "namespace", "url", "events", "filter", "enabled", "failures"],
        [
            [
                s["id"],
                s["namespace"],
                s["url"],
                ",".join(s["event_types"]),
                " ".join(f"{k}={s[k]}" for k in ("handler", "queue") if s[k]) or "-",
                "yes" if s["enabled"] else f"NO: {s['disabled_reason']}",
                s["consecutive_failures"],
            ]
            for s in items
        ],
    )


def _show_secret(made: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(made)
        return
    _rows([made])
    click.echo(f"secret: {made['secret']}")
    click.echo("Store it now: it is not shown again (rota webhooks rotate-secret makes a new one).")


@webhooks.command("list")
@api_options
def webhooks_list(url: str | None, token: str | None, as_json: bool) -> None:
    """Every subscription you can see (never their secrets)."""
    with api_client(url, token) as client:
        items = client.list_webhooks()
    print_json(items) if as_json else _rows(items)


@webhooks.command("create")
@click.argument("target")
@click.option("--event", "events", multiple=True, required=True, type=EVENT_CHOICE)
@namespace_option
@click.option("--handler", default=None, help="Only runs of this handler.")
@click.option("--queue", default=None, help="Only runs on this queue.")
@api_options
def webhooks_create(
    target: str,
    events: tuple[str, ...],
    namespace: str,
    handler: str | None,
    queue: str | None,
    url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Subscribe TARGET (an http(s) URL) to run events; prints the secret once."""
    with api_client(url, token) as client:
        made = client.create_webhook(target, events, namespace, handler, queue)
    _show_secret(made, as_json)


@webhooks.command("update")
@click.argument("subscription_id", type=int)
@click.option("--target", default=None, help="A new URL.")
@click.option("--event", "events", multiple=True, type=EVENT_CHOICE)
@click.option("--enable/--disable", "enabled", default=None)
@api_options
def webhooks_update(
    subscription_id: int,
    target: str | None,
    events: tuple[str, ...],
    enabled: bool | None,
    url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Change a subscription's URL or events, or enable it again after it was disabled."""
    changes: dict[str, Any] = {"url": target, "event_types": list(events) or None}
    changes["enabled"] = enabled
    with api_client(url, token) as client:
        updated = client.update_webhook(
            subscription_id, **{k: v for k, v in changes.items() if v is not None}
        )
    print_json(updated) if as_json else _rows([updated])


@webhooks.command("delete")
@click.argument("subscription_id", type=int)
@api_options
def webhooks_delete(
    subscription_id: int, url: str | None, token: str | None, as_json: bool
) -> None:
    """Delete a subscription and its delivery history."""
    with api_client(url, token) as client:
        client.delete_webhook(subscription_id)
    click.echo(f"deleted webhook subscription {subscription_id}")


@webhooks.command("rotate-secret")
@click.argument("subscription_id", type=int)
@api_options
def webhooks_rotate(
    subscription_id: int, url: str | None, token: str | None, as_json: bool
) -> None:
    """A new secret, printed once; the old one keeps signing beside it for 24 hours."""
    with api_client(url, token) as client:
        rotated = client.rotate_webhook_secret(subscription_id)
    _show_secret(rotated, as_json)


@webhooks.command("deliveries")
@click.argument("subscription_id", type=int)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 200))
@api_options
def webhooks_deliveries(
    subscription_id: int, limit: int, url: str | None, token: str | None, as_json: bool
) -> None:
    """A subscription's delivery history, newest first."""
    with api_client(url, token) as client:
        items = client.webhook_deliveries(subscription_id, limit)
    if as_json:
        print_json(items)
        return
    table(
        ["id", "webhook-id", "event", "run", "state", "tries", "last status", "last error"],
        [
            [
                d["id"],
                d["webhook_id"],
                d["event_type"],
                d["run_id"],
                d["state"],
                d["tries"],
                d["last_status"],
                d["last_error"],
            ]
            for d in items
        ],
    )


@webhooks.command("redeliver")
@click.argument("delivery_id", type=int)
@api_options
def webhooks_redeliver(delivery_id: int, url: str | None, token: str | None, as_json: bool) -> None:
    """Send a delivery again, under the same webhook-id."""
    with api_client(url, token) as client:
        again = client.redeliver(delivery_id)
    print_json(again) if as_json else click.echo(f"delivery {again['id']} queued again")
