"""What the commands that open the database themselves (no server) share: ``--db``, the
settings it gives, running a use case against the store, its errors in one line (exit
3: the database is unreachable), and the audit entry a command that changes the
database writes (actor ``os:<user>@<host>``: no API credential is involved)."""

from __future__ import annotations

import asyncio
import getpass
import os
import socket
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click

from rota.bootstrap import open_store
from rota.cli.errors import fail
from rota.clock import SystemClock
from rota.config import Settings
from rota.errors import RotaError, StoreError, StoreUnavailable
from rota.services import access
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


def os_actor() -> str:
    """Who runs this command, for the audit log: ``os:<user>@<host>``."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry (some containers)
        user = f"uid-{os.getuid()}"
    return f"os:{user}@{socket.gethostname()}"


async def audit_command(
    store: Store,
    action: str,
    target: str,
    namespace: str | None = None,
    outcome: str = "ok",
    detail: str | None = None,
) -> None:
    """Write the one audit entry of a command that changed the database."""
    await access.record_command(
        store,
        SystemClock(),
        os_actor(),
        action,
        target,
        namespace=namespace,
        outcome=outcome,
        detail=detail,
    )


async def with_audited_store(
    settings: Settings,
    action: str,
    target: str,
    fn: Callable[[Store], Coroutine[Any, Any, T]],
    namespace: str | None = None,
) -> T:
    """:func:`with_store` for a command that changes the database: one audit entry,
    ``ok`` when ``fn`` did its change, ``rejected`` (with the kind of error, never its
    text, which may quote a value) when rota refused it. An unreachable or failing
    database gets none: there is nowhere to write it."""
    store = await open_store(settings)
    try:
        try:
            result = await fn(store)
        except StoreError:
            raise
        except RotaError as exc:
            detail = type(exc).__name__
            await audit_command(store, action, target, namespace, outcome="rejected", detail=detail)
            raise
        await audit_command(store, action, target, namespace)
        return result
    finally:
        await store.close()
