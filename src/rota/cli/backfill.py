"""``rota jobs backfill NAME --from T1 --to T2``: one run per slot of the job's schedule
through the HTTP API, chunk by chunk under a progress bar (ADR 0024)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from rota.cli.api_client import api_client, api_options, namespace_option
from rota.cli.errors import instant_arg
from rota.cli.output import print_json
from rota.client import RotaClient
from rota.domain.backfill import CONFIRM_ABOVE, MAX_BACKFILL_SLOTS

CHUNK = 200  # slots per request: small enough for a moving bar, large enough to be quick


@click.command("backfill")
@click.argument("name")
@api_options
@click.option("--from", "start", required=True, help="First instant, with an offset (inclusive).")
@click.option("--to", "end", required=True, help="Last instant, with an offset (exclusive).")
@click.option(
    "--max-in-flight",
    type=click.IntRange(1, MAX_BACKFILL_SLOTS),
    default=None,
    help="At most this many of the backfill's runs run at once.",
)
@click.option("--yes", is_flag=True, help=f"Go ahead with more than {CONFIRM_ABOVE} slots.")
@namespace_option
def backfill(
    name: str,
    url: str | None,
    token: str | None,
    as_json: bool,
    start: str,
    end: str,
    max_in_flight: int | None,
    yes: bool,
    namespace: str,
) -> None:
    """Create one run per slot of NAME's schedule in [--from, --to), in the schedule's
    own time zone; slots that have a run already are left alone (run it again
    safely). More than 1,000 slots need --yes; more than 10,000: split the range."""
    first, last = instant_arg("--from", start), instant_arg("--to", end)
    options: dict[str, Any] = {"namespace": namespace, "max_in_flight": max_in_flight}
    with api_client(url, token) as client:
        counted = client.backfill_job(name, first, last, confirm=yes, dry_run=True, **options)
        totals = _chunks(client, name, first, last, counted["total"], yes, options, as_json)
    if as_json:
        print_json({"total": counted["total"], **totals})
        return
    click.echo(
        f"backfilled {name}: {counted['total']} slots, {totals['created']} runs created, "
        f"{totals['existing']} had one already"
    )


def _chunks(
    client: RotaClient,
    name: str,
    start: datetime,
    end: datetime,
    total: int,
    confirmed: bool,
    options: dict[str, Any],
    quiet: bool,
) -> dict[str, int]:
    """Every chunk of the range, the bar moving by the slots each one handled."""
    totals = {"created": 0, "existing": 0}
    columns = (TextColumn("backfill"), BarColumn(), MofNCompleteColumn())
    console = Console(stderr=True)
    with Progress(*columns, console=console, disable=quiet or total == 0) as progress:
        task = progress.add_task("slots", total=total)
        next_from: datetime | None = start if total else None
        while next_from is not None:
            done = client.backfill_job(
                name, next_from, end, confirm=confirmed, limit=CHUNK, **options
            )
            totals["created"] += done["created"]
            totals["existing"] += done["existing"]
            progress.advance(task, done["slots"])
            following = done["next_from"]
            next_from = datetime.fromisoformat(following) if following else None
    return totals
