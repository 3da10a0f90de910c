"""PostgreSQL's session under the dialect seam: named queries on one connection, their
parameters encoded, batches sent as arrays (one statement for every item), and COPY."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

import psycopg
from psycopg.rows import dict_row

from rota.domain.runs import NewRun
from rota.errors import StoreError
from rota.store.dialect import NO_PARAMS, Params, Row
from rota.store.postgres.base import _translated
from rota.store.queries import load_queries

DIALECT = "postgres"
Q = load_queries(DIALECT)

# COPY is PostgreSQL's own capability (supports_copy): its statements live with it,
# not in the name set both dialects share. COPY returns nothing, so ids are drawn first,
# as one array (one row to read back, not one per run).
RESERVE_IDS = (
    "SELECT array_agg(nextval('rota_run_id_seq')) AS ids,"
    " COALESCE(%(now)s::timestamptz, now()) AS now"
    " FROM generate_series(1, %(count)s)"
)
# The columns COPY writes, with the type each is sent as (binary COPY: no value is
# formatted as text by us or parsed from text by the server).
COPY_COLUMNS = (
    ("id", "int8"),
    ("namespace", "text"),
    ("handler", "text"),
    ("queue", "text"),
    # jsonb's binary form is a version byte (1) then the JSON text: the payload is
    # already checked JSON text, so it travels as those bytes (psycopg's jsonb dumper
    # would encode the text again, as a JSON string). The server parses it (jsonb_recv).
    ("payload", "bytea"),
    ("priority", "int2"),
    ("run_at", "timestamptz"),
    ("sort_at", "timestamptz"),
    ("max_attempts", "int4"),
    ("timeout_seconds", "float8"),
    ("replay_of", "int8"),
    ("job_id", "int8"),
    ("slot_at", "timestamptz"),
    ("tags", "text[]"),
    ("concurrency_key", "text"),
    ("concurrency_limit", "int4"),
    ("deadline", "timestamptz"),
    ("correlation_id", "text"),
    ("trace_context", "text"),
    ("rate_key", "text"),
    ("breaker_key", "text"),
    ("created_at", "timestamptz"),
)
COPY_RUNS = (
    f"COPY rota_runs ({', '.join(name for name, _ in COPY_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
)
COPY_TYPES = [sql_type for _, sql_type in COPY_COLUMNS]
JSONB_VERSION = b"\x01"


@cache
def _takes_parameters(query: str) -> bool:
    """A query without parameters is sent as is: it may be several statements."""
    return "%(" in Q[query]


def _encode(value: Any) -> Any:
    return list(value) if isinstance(value, tuple | frozenset | set) else value


def _array_literal(values: Sequence[str]) -> str:
    """A PostgreSQL array literal; names are checked (no quotes or commas) upstream."""
    return "{" + ",".join(f'"{v}"' for v in values) + "}"


def _element(value: Any) -> Any:
    # unnest cannot take an array of arrays of different lengths: a list inside a
    # batch travels as one array literal, cast back to text[] in SQL.
    if isinstance(value, list | tuple):
        return _array_literal(value)
    return value


def as_arrays(items: Sequence[Params], shared: Params) -> dict[str, Any]:
    """Items as parallel arrays, one per parameter name, plus the shared scalars."""
    columns: dict[str, Any] = {key: _encode(value) for key, value in shared.items()}
    for key in items[0]:
        column = [item[key] for item in items]
        # Only a column that holds lists needs each value looked at (the hot path's
        # columns are scalars: no call per value for them).
        sample = next((value for value in column if value is not None), None)
        columns[key] = [_element(v) for v in column] if isinstance(sample, list | tuple) else column
    return columns


class PgSession:
    def __init__(self, conn: psycopg.AsyncConnection[Any], now: datetime | None) -> None:
        self.conn = conn
        self.now = now

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        with _translated():
            async with self.conn.cursor(row_factory=dict_row) as cur:
                if _takes_parameters(query):
                    bound: Mapping[str, Any] = {
                        **{k: _encode(v) for k, v in params.items()},
                        "now": self.now,
                    }
                    await cur.execute(Q[query], bound)
                else:
                    await cur.execute(Q[query])
                return await cur.fetchall() if cur.description else []

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        if not items:
            return []
        return await self.rows(query, as_arrays(items, shared))

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        with _translated():
            async with self.conn.transaction():  # a savepoint inside a caller's transaction
                cur = await self.conn.execute(RESERVE_IDS, {"count": len(runs), "now": self.now})
                [(ids, db_now)] = await cur.fetchall()
                aging = timedelta(seconds=aging_seconds)
                async with self.conn.cursor().copy(COPY_RUNS) as copy:
                    copy.set_types(COPY_TYPES)
                    for row in _copy_rows(ids, runs, db_now, aging):
                        await copy.write_row(row)
        return list(ids)


def _copy_rows(
    ids: Sequence[int], runs: Sequence[NewRun], db_now: datetime, aging: timedelta
) -> Iterator[tuple[Any, ...]]:
    """The COPY rows of ``runs``, in COPY_COLUMNS' order (tags are sorted already)."""
    for run_id, run in zip(ids, runs, strict=True):
        run_at = run.run_at or db_now
        yield (
            run_id,
            run.namespace,
            run.handler,
            run.queue,
            JSONB_VERSION + run.payload_json.encode(),
            run.priority,
            run_at,
            run_at - aging * run.priority,
            run.max_attempts,
            run.timeout,
            run.replay_of,
            run.job_id,
            run.slot_at,
            list(run.tags) if run.tags else None,
            run.concurrency_key,
            run.concurrency_limit,
            run.deadline,
            run.correlation_id,
            run.trace_context,
            run.rate_key,
            run.breaker_key,
            db_now,
        )


class SyncPgSession:
    """A session on a caller's plain (sync) psycopg connection. Its calls never suspend,
    so a core body runs on it synchronously (:func:`rota.store.dialect.drive`): the
    same code as on :class:`PgSession`, no second copy of the logic."""

    def __init__(self, conn: psycopg.Connection[Any], now: datetime | None) -> None:
        self.conn = conn
        self.now = now

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        with _translated(), self.conn.cursor(row_factory=dict_row) as cur:
            bound = {**{k: _encode(v) for k, v in params.items()}, "now": self.now}
            cur.execute(Q[query], bound)
            return cur.fetchall() if cur.description else []

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        if not items:
            return []
        return await self.rows(query, as_arrays(items, shared))

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        raise StoreError("COPY on a caller's sync connection is not used (copy=False)")
