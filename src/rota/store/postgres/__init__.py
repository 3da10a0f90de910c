"""The PostgreSQL store: psycopg 3 with an async pool (see ``store.py``)."""

from rota.store.postgres.base import (
    CONNECT_OPTIONS,
    COPY_THRESHOLD,
    HOT_PATH_LIMITS,
    MIGRATION_LIMITS,
    HandlerPoolOptions,
    SessionLimits,
)
from rota.store.postgres.store import (
    PostgresHandlerTransaction,
    PostgresStore,
    enqueue_on_sync_connection,
)

__all__ = [
    "CONNECT_OPTIONS",
    "COPY_THRESHOLD",
    "HOT_PATH_LIMITS",
    "MIGRATION_LIMITS",
    "HandlerPoolOptions",
    "PostgresHandlerTransaction",
    "PostgresStore",
    "SessionLimits",
    "enqueue_on_sync_connection",
]
