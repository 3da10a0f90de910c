"""``rota db upgrade|status``: the database schema. An upgrade writes one audit entry
(actor ``os:<user>@<host>``), once the schema has the audit log."""

from __future__ import annotations

from typing import Any

import click

from rota.bootstrap import upgrade as upgrade_schema
from rota.cli.store_access import audit_command, db_option, run, settings_for, with_store


@click.group()
def db() -> None:
    """Schema management."""


@db.command()
@db_option
def upgrade(db: str | None) -> None:
    """Apply pending migrations."""
    settings = settings_for(db)
    applied = run(lambda: upgrade_schema(settings))
    detail = f"applied {', '.join(map(str, applied))}" if applied else "already up to date"
    run(
        lambda: with_store(
            settings, lambda s: audit_command(s, "db.upgrade", "schema", detail=detail)
        )
    )
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
