"""The SQLite store: the one SqlStore over the SQLite dialect (see ``dialect.py``)."""

from rota.domain.workflows import DEFAULT_MAP_MAX_ITEMS
from rota.store.sql_store import SqlStore
from rota.store.sqlite.dialect import SqliteDialect, path_from_url


class SqliteStore(SqlStore):
    def __init__(
        self,
        url: str,
        *,
        aging_seconds: float = 60.0,
        poll_seconds: float = 0.05,
        map_max_items: int = DEFAULT_MAP_MAX_ITEMS,
    ):
        super().__init__(
            SqliteDialect(url, poll_seconds),
            aging_seconds=aging_seconds,
            map_max_items=map_max_items,
        )
        self.url = url
        self.path = path_from_url(url)


__all__ = ["SqliteStore", "path_from_url"]
