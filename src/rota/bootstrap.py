"""The one place that picks SQLite or PostgreSQL from a database URL."""

from __future__ import annotations

from rota.config import Settings, check_url
from rota.errors import SchemaMismatch
from rota.store.port import Store


def make_store(settings: Settings) -> Store:
    url = check_url(settings.database_url)
    if url.startswith("sqlite:///"):
        from rota.store.sqlite import SqliteStore

        return SqliteStore(
            url, aging_seconds=settings.aging_seconds, poll_seconds=settings.sqlite_poll_seconds
        )
    from rota.store.postgres import PostgresStore

    return PostgresStore(url, aging_seconds=settings.aging_seconds, pool_size=settings.pool_size)


async def open_store(settings: Settings) -> Store:
    """Open a store and make sure its schema is one this rota can use."""
    store = make_store(settings)
    await store.open()
    try:
        status = await store.schema_status()
        if status.current > status.latest:
            raise SchemaMismatch(status.current, status.latest)
        if not status.up_to_date:
            if not settings.auto_migrate:
                raise SchemaMismatch(status.current, status.latest)
            await store.migrate()
    except BaseException:
        await store.close()
        raise
    return store
