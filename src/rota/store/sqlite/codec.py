"""SQLite's codecs: instants are REAL unix seconds, lists and JSON are JSON text, and a
named query may be several statements."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
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
        "paused_at",
        "oldest_due_at",
        "bucket_start",
        "counted_from",
        "counted_until",
        "revoked_at",
        "now",
        # webhooks
        "next_attempt_at",
        "occurred_at",
        # events
        "published_at",
        "delivered_at",
        "disabled_at",
        "previous_secret_expires_at",
    }
)
JSON_COLUMNS = frozenset(
    {
        "payload",
        "result",
        "tags",
        "queues",
        "scopes",
        "namespaces",
        "definition",
        "step_input",
        "event_data",
    }
)


def to_instant(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


# Parameters of these types pass as they are (a set lookup of the type is the cheapest
# test on the hot path, where every call binds a dozen parameters).
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), bytes})


def encode(value: Any) -> Any:
    """A parameter as SQLite stores it."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, list | tuple | frozenset | set):
        return json.dumps(list(value))
    return value


def encoded(params: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(params)
    for key, value in out.items():
        if type(value) not in _PLAIN_TYPES:
            out[key] = encode(value)
    return out


def items_json(items: Iterable[Mapping[str, Any]]) -> str:
    """A batch as one JSON array of objects, for a set-based query's ``:items``: read
    back with ``value ->> 'name'``, an integer stays an integer and a float round-trips
    (Python writes the shortest repr that reads back the same)."""
    return json.dumps([encoded(item) for item in items])


def decoded(names: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Rows as dicts, with instants as datetimes and JSON columns decoded (the columns to
    decode are found once per result, not once per row)."""
    instants, documents = _to_decode(tuple(names))
    out = []
    for values in rows:
        row = dict(zip(names, values, strict=True))
        for name in instants:
            if (value := row[name]) is not None:
                row[name] = datetime.fromtimestamp(value, UTC)
        for name in documents:
            if (value := row[name]) is not None:
                row[name] = json.loads(value)
        out.append(row)
    return out


@cache
def _to_decode(names: tuple[str, ...]) -> tuple[list[str], list[str]]:
    return [n for n in names if n in INSTANT_COLUMNS], [n for n in names if n in JSON_COLUMNS]


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
