"""``--app package.module:attribute`` -> the user's App, for every command that loads one
(``rota worker``, ``rota enqueue``, ``rota server``). A bad target is one line and exit 2
(bad usage)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from rota.app import App
from rota.cli.errors import fail
from rota.errors import RotaError

# Like uvicorn's --app-dir: the folder holding tasks.py is where a user runs the
# command from, and a console script's sys.path does not contain it.
app_dir_option = click.option(
    "--app-dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Import --app's module from this directory (put first on sys.path).",
)


def load_app(target: str, app_dir: str = ".") -> App:
    """``package.module:attribute``, imported from ``app_dir`` first -> the App it names."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        fail(f"--app {target!r}: expected MODULE:ATTRIBUTE, e.g. myproject.tasks:app")
    directory = str(Path(app_dir).resolve())
    if directory not in sys.path:
        sys.path.insert(0, directory)
    try:
        module = importlib.import_module(module_name)
    except RotaError as exc:  # e.g. a bad ROTA_* value met by the module's rota.App()
        fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module is one line
        reason = str(exc).splitlines()[0] if str(exc) else ""
        fail(
            f"--app {target!r}: cannot import {module_name!r} from {directory}"
            f" ({type(exc).__name__}: {reason})"
        )
    app = getattr(module, attribute, None)
    if not isinstance(app, App):
        fail(f"--app {target!r}: {module_name}.{attribute} is not a rota.App")
    return app
