"""How a command reports an error: one line, ``rota: error: ...``, and an exit code (1: it
failed, 2: bad usage or settings, 3: the server or the database is unreachable)."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

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
