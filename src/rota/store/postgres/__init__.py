"""The PostgreSQL store: the one SqlStore over the PostgreSQL dialect (``dialect.py``),
plus its optional ports (``ports.py``)."""

from __future__ import annotations

from typing import Any

from rota.domain.workflows import DEFAULT_MAP_MAX_ITEMS
from rota.store.core.base import COPY_THRESHOLD
from rota.store.postgres.base import (
    CONNECT_OPTIONS,
    DEFAULT_HANDLER_POOL,
    HOT_PATH_LIMITS,
    MIGRATION_LIMITS,
    HandlerPoolOptions,
    SessionLimits,
)
from rota.store.postgres.dialect import PgDialect
from rota.store.postgres.ports import (
    PostgresCallerEnqueue,
    PostgresHandlerTransaction,
    begin_handler_transaction,
)
from rota.store.sql_store import SqlStore
from rota.supervise import Restarts


class PostgresStore(SqlStore):
    def __init__(
        self,
        url: str,
        *,
        aging_seconds: float = 60.0,
        pool_size: int = 4,
        handler_pool: HandlerPoolOptions = DEFAULT_HANDLER_POOL,
        map_max_items: int = DEFAULT_MAP_MAX_ITEMS,
    ) -> None:
        self._pg = PgDialect(url, pool_size=pool_size, handler_pool=handler_pool)
        super().__init__(self._pg, aging_seconds=aging_seconds, map_max_items=map_max_items)
        self.url = url
        self.handler_pool = handler_pool

    @property
    def restarts(self) -> Restarts:
        """Failures of the store's own background task (the LISTEN connection)."""
        return self._pg.restarts

    def _conn(self) -> Any:
        """A pooled hot-path connection (tests read its session settings)."""
        return self._pg.connection()

    # -- the optional ports (store/optional.py) ---------------------------------
    async def begin_handler_transaction(self) -> PostgresHandlerTransaction:
        return await begin_handler_transaction(
            self._pg.handler_pool, self.handler_pool, self.map_max_items
        )


__all__ = [
    "CONNECT_OPTIONS",
    "COPY_THRESHOLD",
    "HOT_PATH_LIMITS",
    "MIGRATION_LIMITS",
    "HandlerPoolOptions",
    "PostgresCallerEnqueue",
    "PostgresHandlerTransaction",
    "PostgresStore",
    "SessionLimits",
]
