"""What a command prints: readable tables by default, JSON for scripts (``--json``)."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

console = Console()


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def table(columns: list[str], rows: list[list[Any]]) -> None:
    shown = Table(*columns)
    for row in rows:
        shown.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(shown)
