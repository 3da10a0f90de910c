"""``rota runs bulk cancel|requeue|replay|delete``: act on every run a filter matches,
through the HTTP API. It shows the count and asks first (``--yes`` does not ask); the
server then walks the runs in keyset batches of 500 and answers what it did."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from rota.cli.api_client import F, api_client, api_options
from rota.cli.errors import fail
from rota.cli.output import print_json
from rota.domain.bulk_actions import BulkAction

DOING = {
    BulkAction.CANCEL: ("cancel", "cancelled"),
    BulkAction.REQUEUE: ("requeue", "requeued"),
    BulkAction.REPLAY: ("replay", "replayed"),
    BulkAction.DELETE: ("delete", "deleted"),
}


@click.group()
def bulk() -> None:
    """Act on every run a filter matches: cancel, requeue, replay, delete."""


def _instant(option: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        fail(f"{option} {text!r} is not an ISO 8601 instant (e.g. 2026-10-19T00:00+02:00)", 2)
    if value.tzinfo is None:
        fail(f"{option} {text!r} has no UTC offset; add one (e.g. +02:00 or Z)", 2)
    return value


def bulk_filters(command: F) -> F:
    for option in reversed(
        [
            click.option("--state", multiple=True, help="Repeat for several states."),
            click.option("--job", default=None),
            click.option("--namespace", default=None),
            click.option("--handler", default=None),
            click.option("--queue", default=None),
            click.option("--tag", default=None),
            click.option("--search", "q", default=None, help="Text in handler, job or error."),
            click.option("--created-after", default=None, help="ISO 8601 with an offset."),
            click.option("--created-before", default=None, help="ISO 8601 with an offset."),
            click.option("--yes", is_flag=True, help="Do not ask for confirmation."),
        ]
    ):
        command = option(command)
    return command


def _act(
    action: BulkAction, url: str | None, token: str | None, as_json: bool, **given: Any
) -> None:
    yes = given.pop("yes")
    filters: dict[str, Any] = {name: value for name, value in given.items() if value}
    filters["state"] = list(given["state"])
    for name in ("created_after", "created_before"):
        option = "--" + name.replace("_", "-")
        filters[name] = _instant(option, given[name])
    verb, done = DOING[action]
    with api_client(url, token) as client:
        count = int(client.preview_bulk(action.value, **filters)["count"])
        if count == 0:
            if as_json:
                print_json({"action": action.value, "matched": 0, "affected": 0, "skipped": 0})
            else:
                click.echo(f"no runs match: nothing to {verb}")
            return
        if not yes:  # asked on stderr, so that --json's stdout stays JSON
            click.confirm(
                f"{count} runs match. {verb.capitalize()} them all?", abort=True, err=True
            )
        click.echo(f"{verb} {count} runs: working in batches of 500...", err=True)
        result = client.run_bulk(action.value, count, **filters)
    if as_json:
        print_json(result)
        return
    click.echo(
        f"{done} {result['affected']} of {result['matched']} runs "
        f"({result['skipped']} skipped: their state moved on or they left the filter; "
        f"{result['batches']} batches)"
    )


def _command(action: BulkAction, help_text: str) -> None:
    @bulk.command(action.value, help=help_text)
    @api_options
    @bulk_filters
    def command(url: str | None, token: str | None, as_json: bool, **given: Any) -> None:
        _act(action, url, token, as_json, **given)


_command(BulkAction.CANCEL, "Cancel every live run the filter matches (needs jobs:trigger).")
_command(
    BulkAction.REQUEUE,
    "Requeue every dead-lettered, failed, timed-out or cancelled run the filter matches "
    "as a fresh run (needs jobs:trigger).",
)
_command(
    BulkAction.REPLAY,
    "Replay every dead-lettered run the filter matches as a fresh run (needs jobs:trigger).",
)
_command(
    BulkAction.DELETE,
    "Delete every finished run the filter matches, with its attempts and logs (needs jobs:admin).",
)
