"""What the commands that open the database themselves (no server) share: ``--db``, the
settings it gives, and running a use case against the store, its errors in one line
(exit 3: the database is unreachable)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click

from rota.bootstrap import open_store
from rota.cli.errors import fail
from rota.config import Settings
from rota.errors import RotaError, StoreUnavailable
from rota.store.port import Store

T = TypeVar("T")

db_option = click.option(
    "--db",
    envvar="ROTA_DATABASE_URL",
    default=None,
    help="Database URL (default sqlite:///rota.db).",
)


def settings_for(db: str | None) -> Settings:
    try:
        return Settings.from_env(database_url=db)
    except RotaError as exc:
        fail(str(exc))  # one line (a bad URL is shown with its password hidden)


def run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine, turning rota errors into one clear line and a non-zero exit."""
    try:
        return asyncio.run(make())
    except StoreUnavailable as exc:
        fail(str(exc), code=3)
    except RotaError as exc:
        fail(str(exc))


async def with_store(settings: Settings, fn: Callable[[Store], Coroutine[Any, Any, T]]) -> T:
    store = await open_store(settings)
    try:
        return await fn(store)
    finally:
        await store.close()
