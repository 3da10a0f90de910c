"""``rota config show`` and ``rota config check FILE``, and how every command finds its
settings: a flag, else ``ROTA_*``, else the configuration file, else the default
(rota.config.sources). The file is ``--config PATH`` (before the command) or
``ROTA_CONFIG``."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import click

from rota.api.settings import ApiSettings
from rota.cli.errors import fail
from rota.config import DEFAULTS, Settings
from rota.config import file as config_file
from rota.config.schema import ENTRIES, Entry, cli_entry
from rota.config.sources import CONFIG_VARIABLE, Sources
from rota.endpoint import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_URL
from rota.engine.worker import DEFAULT_CONCURRENCY
from rota.errors import RotaError
from rota.redact import HIDDEN, redact_url

# The command line's own settings when nowhere set (None: off, or worked out at start).
CLI_DEFAULTS: dict[str, Any] = {
    "host": DEFAULT_HOST,
    "port": DEFAULT_PORT,
    "concurrency": DEFAULT_CONCURRENCY,
    "loop": "auto",
    "tags": [],
    "url": DEFAULT_URL,
}
# `rota server` works runs and stands for leader unless told not to.
SERVER_DEFAULTS = {"embedded_worker": True, "embedded_leader": True}


def sources() -> Sources:
    """The file's and the environment's values, or one line and exit 2."""
    try:
        return Sources.read()
    except RotaError as exc:
        fail(str(exc))


def option(found: Sources, field: str, flag: Any = None) -> Any:
    """A command-line setting: the flag, else ROTA_*, else the file, else its default."""
    value = found.value(cli_entry(field).key, flag)
    return CLI_DEFAULTS.get(field) if value is None else value


def default(entry: Entry) -> Any:
    if entry.target == "settings":
        return DEFAULTS.get(entry.field)
    if entry.target == "api":
        if entry.field in SERVER_DEFAULTS:
            return SERVER_DEFAULTS[entry.field]
        return next(f.default for f in fields(ApiSettings) if f.name == entry.field)
    return CLI_DEFAULTS.get(entry.field)


def shown(entry: Entry, value: Any) -> str:
    if value is None:
        return "(not set)"
    if entry.field == "database_url":
        return redact_url(str(value))
    if entry.secret:
        return HIDDEN
    if isinstance(value, list | tuple):
        return ", ".join(value) or "(none)"
    return str(value)


@click.group()
def config() -> None:
    """The effective settings, and checking a configuration file."""


@config.command()
@click.option("--db", default=None, help="Database URL, as every command's --db.")
@click.pass_context
def show(context: click.Context, db: str | None) -> None:
    """Every setting's effective value (secrets hidden) and where it came from."""
    found = sources()
    # The flags this command can be given: --db here, --ca-file before the command
    # (which sets ROTA_CA_FILE for the process, so it would read as the environment).
    flags = {"database.url": db, "client.ca_file": context.find_root().params.get("ca_file")}
    width = max(len(entry.key) for entry in ENTRIES)
    for entry in ENTRIES:
        value = found.value(entry.key, flags.get(entry.key))
        origin = found.origin(entry.key, flags.get(entry.key))
        if value is None:
            value = default(entry)
        click.echo(f"{entry.key:<{width}}  {shown(entry, value)}  ({origin})")


@config.command()
@click.argument("path", type=click.Path(dir_okay=False))
def check(path: str) -> None:
    """Check PATH (keys, kinds, ranges, and the rules between settings) without
    starting anything; the environment is not read."""
    try:
        values = config_file.load(path)
        alone = {CONFIG_VARIABLE: path}
        Settings.from_env(alone)
        ApiSettings.from_env(alone)
    except RotaError as exc:
        fail(str(exc))
    click.echo(f"{path}: ok ({len(values)} settings)")
