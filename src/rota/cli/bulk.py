"""``rota runs bulk cancel|requeue|replay|delete``: act on every run a filter matches,
through the HTTP API, with the filters of ``rota runs list`` (rota.cli.run_filters) but
its page. It shows the count and asks first (``--yes`` does not ask); the server then
walks the runs in keyset batches of 500 and answers what it did."""

from __future__ import annotations

from typing import Any

import click

from rota.cli.api_client import api_client, api_options
from rota.cli.output import print_json
from rota.cli.run_filters import filter_values, run_filter_options
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


def _act(
    action: BulkAction, url: str | None, token: str | None, as_json: bool, **given: Any
) -> None:
    yes = given.pop("yes")
    filters = filter_values(given)
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
    @run_filter_options
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
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
