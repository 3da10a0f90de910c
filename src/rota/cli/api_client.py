"""What every command that goes through the HTTP API shares: ``--url``, ``--token`` and
``--json``, and the client built from them, whose errors end the command in one line
(exit 3: server unreachable)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from rota.cli.config import option as setting
from rota.cli.config import sources
from rota.cli.errors import fail
from rota.client import ApiError, RotaClient, ServerUnreachable
from rota.endpoint import DEFAULT_URL
from rota.errors import RotaError

F = TypeVar("F", bound=Callable[..., Any])

# The namespace of the one thing a command names (a job, a workflow, an event, ...).
namespace_option = click.option("--namespace", default="default", show_default=True)


def api_options(command: F) -> F:
    """--url / ROTA_URL, --token / ROTA_TOKEN and --json on every API command."""
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)
    command = click.option(
        "--token", default=None, help="A token or API key (ROTA_TOKEN, ROTA_TOKEN_FILE)."
    )(command)
    return click.option(
        "--url", default=None, help=f"rota server (ROTA_URL, client.url; default {DEFAULT_URL})."
    )(command)


@contextmanager
def api_client(
    url: str | None, token: str | None, *, anonymous: bool = False
) -> Iterator[RotaClient]:
    """A client on --url/--token, else ROTA_URL/ROTA_TOKEN (or ROTA_TOKEN_FILE), else
    client.* in the configuration file; the server's certificate is checked against
    --ca-file / ROTA_CA_FILE / client.ca_file when one is given."""
    found = sources()
    try:
        client = RotaClient(
            setting(found, "url", url),
            None if anonymous else setting(found, "token", token),
            ca_file=setting(found, "ca_file"),
        )
    except RotaError as exc:
        fail(str(exc), code=2)
    try:
        yield client
    except ServerUnreachable as exc:
        fail(str(exc), code=3)
    except ApiError as exc:
        fail(str(exc), code=1)
    except RotaError as exc:
        fail(str(exc), code=1)
    finally:
        client.close()
