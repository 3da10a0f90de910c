"""``rota token create``: a development token from the server (outside production only)."""

from __future__ import annotations

import click

from rota.cli.api_client import api_client, api_options
from rota.cli.errors import fail
from rota.cli.output import print_json


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
    with api_client(url, None, anonymous=True) as client:
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
        fail(
            f"{server_url} answered without a token (is it a rota server in development mode?)",
            code=1,
        )
    print_json(answer) if as_json else click.echo(access_token)
