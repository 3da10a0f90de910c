"""``rota db upgrade|status``: the database schema."""

from __future__ import annotations

from typing import Any

import click

from rota.bootstrap import upgrade as upgrade_schema
from rota.cli.store_access import db_option, run, settings_for


@click.group()
def db() -> None:
    """Schema management."""


@db.command()
@db_option
def upgrade(db: str | None) -> None:
    """Apply pending migrations."""
    settings = settings_for(db)
    applied = run(lambda: upgrade_schema(settings))
    click.echo(f"applied migrations {applied}" if applied else "schema already up to date")


@db.command()
@db_option
def status(db: str | None) -> None:
    """Show the schema version."""
    settings = settings_for(db)

    async def go() -> Any:
        from rota.bootstrap import make_store

        store = make_store(settings)
        await store.open()
        try:
            return await store.schema_status()
        finally:
            await store.close()

    result = run(go)
    click.echo(f"schema version {result.current} (this rota knows {result.latest})")
