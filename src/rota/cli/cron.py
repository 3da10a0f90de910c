"""``rota cron next EXPRESSION``: when a cron expression fires, in local time and UTC."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import click
from rich.table import Table

from rota.cli.errors import fail
from rota.cli.output import console, print_json
from rota.clock import SystemClock
from rota.errors import RotaError
from rota.services import schedules as schedules_service


@click.group()
def cron() -> None:
    """Cron expressions."""


@cron.command("next")
@click.argument("expression")
@click.option("--tz", "timezone", default="UTC", show_default=True, help="IANA time zone.")
@click.option("-n", "count", default=10, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True)
def cron_next(expression: str, timezone: str, count: int, as_json: bool) -> None:
    """The next fire instants of EXPRESSION, in local time and UTC."""
    try:
        instants = schedules_service.cron_preview(
            expression, timezone, count, after=SystemClock().now()
        )
    except RotaError as exc:
        fail(str(exc))
    zone = ZoneInfo(timezone)
    if as_json:
        print_json(
            [{"local": t.astimezone(zone).isoformat(), "utc": t.isoformat()} for t in instants]
        )
        return
    table = Table(f"local ({timezone})", "UTC")
    for t in instants:
        table.add_row(
            t.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z"), t.strftime("%Y-%m-%d %H:%M:%S")
        )
    console.print(table)
