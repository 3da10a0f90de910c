"""The run filters every run command takes, as options: ``rota runs list``, ``rota dlq
list`` and ``rota runs bulk ...`` (the API's query parameters, rota.api.run_filters).
A listing adds its page (``--limit``, ``--cursor``); a bulk action has none."""

from __future__ import annotations

from typing import Any

import click

from rota.cli.api_client import F
from rota.cli.errors import fail, instant_arg
from rota.domain.labels import parse_labels
from rota.errors import InvalidArgument

FILTER_OPTIONS = (
    click.option("--state", multiple=True, help="Repeat for several states."),
    click.option("--job", default=None),
    click.option("--namespace", default=None),
    click.option("--handler", default=None),
    click.option("--queue", default=None),
    click.option("--tag", default=None),
    click.option("--search", "q", default=None, help="Text in handler, job or error."),
    click.option("--owner", default=None),
    click.option("--label", "labels", multiple=True, help="key=value; repeat: all must match."),
    click.option("--priority", type=int, default=None),
    click.option("--created-after", default=None, help="ISO 8601 with an offset."),
    click.option("--created-before", default=None, help="ISO 8601 with an offset."),
)
PAGE_OPTIONS = (
    click.option("--limit", type=int, default=20, show_default=True),
    click.option("--cursor", default=None, help="next_cursor of the previous page."),
)


def _with(options: tuple[Any, ...], command: F) -> F:
    for option in reversed(options):
        command = option(command)
    return command


def run_filter_options(command: F) -> F:
    """The filters alone (a bulk action)."""
    return _with(FILTER_OPTIONS, command)


def run_filters(command: F) -> F:
    """The filters and a page (a listing)."""
    return _with(FILTER_OPTIONS + PAGE_OPTIONS, command)


def label_filter(texts: tuple[str, ...]) -> dict[str, str]:
    """Repeated ``--label key=value`` as the client's labels; a bad one is one line and
    exit 2."""
    try:
        return dict(parse_labels(texts))
    except InvalidArgument as exc:
        fail(str(exc))


def filter_values(given: dict[str, Any]) -> dict[str, Any]:
    """The options as the client's filters: the states a list, the labels a mapping,
    the instants parsed (a bad label or instant: one line, exit 2)."""
    values = {**given, "state": list(given["state"]), "labels": label_filter(given["labels"])}
    for name in ("created_after", "created_before"):
        values[name] = instant_arg("--" + name.replace("_", "-"), given[name])
    return values
