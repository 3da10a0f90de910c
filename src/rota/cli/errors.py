"""How a command reports an error: one line, ``rota: error: ...``, and an exit code (1: it
failed, 2: bad usage or settings, 3: the server or the database is unreachable)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any, NoReturn, overload

import click


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"rota: error: {message}", err=True)
    sys.exit(code)


def json_arg(name: str, text: str | None) -> Any:
    """A JSON argument or option, parsed (None when not given), or one line and exit 2."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{name} {text!r} is not JSON: {exc}", code=2)


@overload
def instant_arg(name: str, text: str) -> datetime: ...
@overload
def instant_arg(name: str, text: str | None) -> datetime | None: ...
def instant_arg(name: str, text: str | None) -> datetime | None:
    """An ISO 8601 instant with a UTC offset, parsed (None when not given), or one line
    and exit 2."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        fail(f"{name} {text!r} is not an ISO 8601 instant (e.g. 2026-10-19T00:00+02:00)", 2)
    if value.tzinfo is None:
        fail(f"{name} {text!r} has no UTC offset; add one (e.g. +02:00 or Z)", 2)
    return value
