"""``--app package.module:attribute`` -> the user's App. Its own module because both
``cli.py`` (worker, enqueue, ...) and ``cli_api.py`` (``rota server``) load apps, and
``cli.py`` imports ``cli_api.py``: living in either would make an import cycle."""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

import click

from rota.app import App


def _fail(message: str) -> NoReturn:
    # The same line and exit code (2: bad usage) as the rest of the CLI's errors.
    click.echo(f"rota: error: {message}", err=True)
    sys.exit(2)


def load_app(target: str) -> App:
    """``package.module:attribute`` -> the App it names."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        _fail(f"--app {target!r}: expected MODULE:ATTRIBUTE, e.g. myproject.tasks:app")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        _fail(f"--app {target!r}: cannot import {module_name!r} ({exc})")
    app = getattr(module, attribute, None)
    if not isinstance(app, App):
        _fail(f"--app {target!r}: {module_name}.{attribute} is not a rota.App")
    return app
