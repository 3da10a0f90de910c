"""SQLite's codecs: instants are REAL unix seconds, lists and JSON are JSON text, and a
named query may be several statements."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from rota.errors import StoreError

# Columns that hold instants (REAL seconds) and JSON text, by the names the queries give
# them; rows are decoded by name so the core sees what PostgreSQL hands back.
INSTANT_COLUMNS = frozenset(
    {
        "run_at",
        "sort_at",
        "lease_expires_at",
        "created_at",
        "started_at",
        "finished_at",
        "at",
        "slot_at",
        "cursor",
        "next_fire_at",
        "updated_at",
        "acquired_at",
        "expires_at",
        "deadline",
        "heartbeat_at",
        "planning_failed_at",
        "planning_retry_at",
        "oldest_due_at",
        "bucket_start",
        "revoked_at",
        "now",
    }
)
JSON_COLUMNS = frozenset({"payload", "result", "tags", "queues", "scopes", "namespaces"})


def to_instant(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def encode(value: Any) -> Any:
    """A parameter as SQLite stores it."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, list | tuple | frozenset | set):
        return json.dumps(list(value))
    return value


def encoded(params: Mapping[str, Any]) -> dict[str, Any]:
    return {key: encode(value) for key, value in params.items()}


def decoded(row: sqlite3.Row) -> dict[str, Any]:
    """A row as a dict with instants as datetimes and JSON columns decoded."""
    out = dict(row)
    for key, value in out.items():
        if value is None:
            continue
        if key in INSTANT_COLUMNS:
            out[key] = datetime.fromtimestamp(value, UTC)
        elif key in JSON_COLUMNS:
            out[key] = json.loads(value)
    return out


def statements(script: str) -> Iterator[str]:
    """Split SQL into statements (a named query, or a migration: executescript would
    commit on its own)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise StoreError(f"SQL ends with an incomplete statement: {buffer[:60]!r}")
