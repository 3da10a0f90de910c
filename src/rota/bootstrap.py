"""The one place that picks SQLite or PostgreSQL from a database URL, and that hands
out a store's optional ports (store/optional.py)."""

from __future__ import annotations

from rota.config import Settings, check_url
from rota.errors import SchemaMismatch
from rota.store.optional import (
    CallerConnectionEnqueue,
    CallerConnectionPublish,
    HandlerTransactions,
)
from rota.store.port import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def make_store(settings: Settings) -> Store:
    url = check_url(settings.database_url)
    if url.startswith("sqlite:///"):
        from rota.store.sqlite import SqliteStore

        return SqliteStore(
            url,
            aging_seconds=settings.aging_seconds,
            poll_seconds=settings.sqlite_poll_seconds,
            map_max_items=settings.map_max_items,
        )
    from rota.store.postgres import HandlerPoolOptions, PostgresStore, SessionLimits

    handler_pool = HandlerPoolOptions(
        size=settings.handler_pool_size,
        wait_seconds=settings.handler_pool_wait_seconds,
        limits=SessionLimits(
            statement=settings.handler_statement_timeout_seconds,
            lock=settings.handler_lock_timeout_seconds,
            idle_in_transaction=settings.handler_idle_in_transaction_seconds,
        ),
    )
    return PostgresStore(
        url,
        aging_seconds=settings.aging_seconds,
        pool_size=settings.pool_size,
        handler_pool=handler_pool,
        map_max_items=settings.map_max_items,
    )


def handler_transactions(store: Store) -> HandlerTransactions | None:
    """The port that lends handlers a transaction committed with their outcome, if the
    store's dialect has one (its flag is set when the store is made)."""
    if not store.supports_handler_transactions:
        return None
    from rota.store.postgres import PostgresStore

    # A class test, not a runtime Protocol check (that costs microseconds a call).
    return store if isinstance(store, PostgresStore) else None


def caller_connection_enqueue(settings: Settings) -> CallerConnectionEnqueue | None:
    """The port that enqueues on the caller's own connection (PostgreSQL only)."""
    if not check_url(settings.database_url).startswith(POSTGRES_SCHEMES):
        return None
    from rota.store.postgres import PostgresCallerEnqueue

    return PostgresCallerEnqueue(settings.aging_seconds)


def caller_connection_publish(settings: Settings) -> CallerConnectionPublish | None:
    """The port that publishes events on the caller's own connection (PostgreSQL only)."""
    if not check_url(settings.database_url).startswith(POSTGRES_SCHEMES):
        return None
    from rota.store.postgres import PostgresCallerEnqueue

    return PostgresCallerEnqueue(settings.aging_seconds)


async def open_store(settings: Settings) -> Store:
    """Open a store and make sure its schema is one this rota can use: refused if it is
    newer than this rota, upgraded if older (when ``auto_migrate``), else refused."""
    store = make_store(settings)
    await store.open()
    try:
        await _check_and_migrate(store, migrate=settings.auto_migrate)
    except BaseException:
        await store.close()
        raise
    return store


async def upgrade(settings: Settings) -> list[int]:
    """``rota db upgrade``: apply pending migrations; returns the versions applied."""
    store = make_store(settings)
    await store.open()
    try:
        return await _check_and_migrate(store, migrate=True)
    finally:
        await store.close()


async def _check_and_migrate(store: Store, migrate: bool) -> list[int]:
    status = await store.schema_status()
    if status.current > status.latest or (not status.up_to_date and not migrate):
        raise SchemaMismatch(status.current, status.latest)
    return [] if status.up_to_date else await store.migrate()
