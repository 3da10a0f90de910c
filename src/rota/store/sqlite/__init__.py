"""The SQLite store: rota's zero-infrastructure default (see ``store.py``)."""

from rota.store.sqlite.base import path_from_url
from rota.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore", "path_from_url"]
