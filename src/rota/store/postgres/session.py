"""PostgreSQL's session under the dialect seam: named queries on one connection, their
parameters encoded, batches sent as arrays (one statement for every item), and COPY."""

from __future__ import annotations

import contextlib
import operator
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from functools import cache
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.rows import dict_row

from rota.domain.runs import NewRun, RunBatch
from rota.errors import StoreError
from rota.store.dialect import NO_PARAMS, ClaimLockBusy, Params, Row
from rota.store.postgres.arrays import as_array
from rota.store.postgres.base import _translated, rerun_on_conflict
from rota.store.queries import as_sent, load_queries

DIALECT = "postgres"
Q = {name: as_sent(sql) for name, sql in load_queries(DIALECT).items()}

# COPY is PostgreSQL's own capability (supports_copy): its statements live with it,
# not in the name set both dialects share. COPY returns nothing, so ids are drawn first,
# as one array (one row to read back, not one per run).
RESERVE_IDS = (
    "SELECT array_agg(nextval('rota_run_id_seq')) AS ids,"
    " COALESCE(%(now)s::timestamptz, now()) AS now"
    " FROM generate_series(1, %(count)s)"
)
# The columns COPY writes, with the type each is sent as (binary COPY: no value is
# formatted as text by us or parsed from text by the server). The runs of a bulk enqueue
# share nearly everything but their id and payload: the shared columns come first and
# are encoded once per distinct shape in a batch (_RowEncoder), the run's own last.
SHARED_COLUMNS = (
    ("namespace", "text"),
    ("handler", "text"),
    ("queue", "text"),
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
    ("owner", "text"),
    ("labels", "jsonb"),
    ("created_at", "timestamptz"),
)
# id (int8), then the payload. jsonb's binary form is a version byte (1) then the JSON
# text: the payload is already checked JSON text, so it travels as those bytes (the
# server parses it, jsonb_recv).
OWN_COLUMNS = ("id", "payload")
COPY_RUNS = (
    f"COPY rota_runs ({', '.join([name for name, _ in SHARED_COLUMNS] + list(OWN_COLUMNS))})"
    " FROM STDIN (FORMAT BINARY)"
)
# What decides a run's shared columns (with the batch's now and aging), in order.
_shared_fields = operator.attrgetter(
    "namespace",
    "handler",
    "queue",
    "priority",
    "run_at",
    "max_attempts",
    "timeout",
    "replay_of",
    "job_id",
    "slot_at",
    "tags",
    "concurrency_key",
    "concurrency_limit",
    "deadline",
    "correlation_id",
    "trace_context",
    "rate_key",
    "breaker_key",
    "owner",
    "labels",
)
# The binary COPY format (PostgreSQL docs, "COPY", Binary Format): a signature, flags
# and header extension length; per row the number of fields, then each field as its
# length (int32, -1 for NULL) and bytes; a trailer of -1 as int16.
COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)
_FIELD_COUNT = struct.pack(">h", len(SHARED_COLUMNS) + len(OWN_COLUMNS))
_NULL = struct.pack(">i", -1)
_ID_AND_PAYLOAD_LENGTH = struct.Struct(">iqi")  # 8, the id, the payload's length
JSONB_VERSION = b"\x01"
COPY_CHUNK_ROWS = 1000  # rows per write: the server works on one while the next is made


@cache
def _takes_parameters(query: str) -> bool:
    """A query without parameters is sent as is: it may be several statements."""
    return "%(" in Q[query]


@contextlib.contextmanager
def _lock_busy(serialised: bool) -> Iterator[None]:
    """In a serialised body, a lock not granted within the transaction's lock_timeout
    (the limits lock's result arrives with the body's first statement) is the claim's
    ClaimLockBusy; elsewhere it is the database not answering in time (_translated)."""
    try:
        yield
    except psycopg.errors.LockNotAvailable:
        if not serialised:
            raise
        raise ClaimLockBusy("another claimer holds the limits lock") from None


def _bound(query: str, params: Params, now: datetime | None) -> Mapping[str, Any] | None:
    """A query's parameters as sent (every one reads ``now``); None for a query without
    parameters, which is sent as is."""
    if not _takes_parameters(query):
        return None
    return {**{k: _encode(v) for k, v in params.items()}, "now": now}


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
        if isinstance(sample, list | tuple):
            columns[key] = [_element(v) for v in column]
        else:
            columns[key] = as_array(column)  # ints and texts built whole (arrays.py)
    return columns


class PgSession:
    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        now: datetime | None,
        pipeline: psycopg.AsyncPipeline | None = None,
    ) -> None:
        self.conn = conn
        self.now = now
        # In in_serialised's pipeline: a transaction (whatever the status says before
        # the next sync), each statement's results read at a sync of it, and one whose
        # COMMIT the body's last statement may carry.
        self.pipeline = pipeline
        self.committed = False

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        if self.pipeline is None:
            return await self.rows(query, params)  # the transaction's owner commits
        rows = await self._rows(query, params, then="COMMIT")  # one round trip for both
        self.committed = True
        return rows

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        if self.pipeline is None and self.conn.info.transaction_status == pq.TransactionStatus.IDLE:
            # A statement of its own (autocommit) may run again after a conflict; in a
            # transaction, the transaction's owner decides (in_transaction).
            return await rerun_on_conflict(lambda: self._rows(query, params))
        return await self._rows(query, params)

    async def _rows(self, query: str, params: Params, then: str | None = None) -> list[Row]:
        with _translated(), _lock_busy(self.pipeline is not None):
            async with self.conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(Q[query], _bound(query, params, self.now))
                if self.pipeline is not None:
                    if then is not None:
                        await self.conn.execute(then)
                    # Sends what is queued (on the first statement: BEGIN and the lock
                    # too) and reads every result: a failure of any raises here.
                    await self.pipeline.sync()
                return await cur.fetchall() if cur.description else []

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        if not items:
            return []
        return await self.rows(query, as_arrays(items, shared))

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        with _translated():
            async with self._savepoint_in_a_transaction():
                async with self.conn.pipeline():
                    # Sent, not awaited: the server draws the ids while the first chunk
                    # of a RunBatch is made and checked here.
                    cur = await self.conn.execute(
                        RESERVE_IDS, {"count": len(runs), "now": self.now}
                    )
                    if isinstance(runs, RunBatch):
                        runs.make_until(COPY_CHUNK_ROWS)
                    [(ids, db_now)] = await cur.fetchall()
                encoder = _RowEncoder(self.conn, db_now, timedelta(seconds=aging_seconds))
                try:
                    async with self.conn.cursor().copy(COPY_RUNS) as copy:
                        await copy.write(COPY_SIGNATURE)
                        for start in range(0, len(runs), COPY_CHUNK_ROWS):
                            end = start + COPY_CHUNK_ROWS
                            # A RunBatch makes and checks these runs now, while the
                            # server stores the chunk before (the two overlap).
                            try:
                                chunk = encoder.rows(ids[start:end], runs[start:end])
                            except Exception as refused:  # noqa: BLE001 - raised again below
                                raise _CopyAborted(refused) from None
                            await copy.write(chunk)
                        await copy.write(COPY_TRAILER)
                except _CopyAborted as aborted:
                    raise aborted.refused from None
        return list(ids)

    def _savepoint_in_a_transaction(self) -> AbstractAsyncContextManager[Any]:
        """COPY is one statement: on an autocommit connection it is atomic alone, and
        the ids drawn before it need no transaction (a sequence never rolls back), so a
        bulk enqueue skips BEGIN and COMMIT (two round trips). Inside a caller's
        transaction a savepoint keeps a failed COPY from aborting it."""
        if self.conn.info.transaction_status == pq.TransactionStatus.IDLE:
            return contextlib.nullcontext()
        return self.conn.transaction()


class _CopyAborted(Exception):
    """Ends a COPY one of whose runs was refused, carrying the refusal out of it. psycopg
    ends an interrupted COPY with the error's text, which reaches the server's log and
    may name a value: this one's text is all the server sees."""

    def __init__(self, refused: Exception) -> None:
        super().__init__()
        self.refused = refused

    def __str__(self) -> str:
        return "a run of the batch was refused; nothing was written"


class _RowEncoder:
    """Binary COPY rows of runs. The shared columns of each distinct shape are encoded
    once (by psycopg's dumpers for their declared types); a row is then those bytes,
    the id and the payload: no per-row dumper calls for twenty mostly equal columns."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], db_now: datetime, aging: timedelta):
        self._transformer = Transformer(conn)
        types = conn.adapters.types
        oids = [types.get_oid(sql_type) for _, sql_type in SHARED_COLUMNS]
        self._transformer.set_dumper_types(oids, pq.Format.BINARY)
        self._formats = [PyFormat.BINARY] * len(SHARED_COLUMNS)
        self._db_now = db_now
        self._aging = aging
        self._segments: dict[tuple[Any, ...], bytes] = {}

    def rows(self, ids: Sequence[int], runs: Sequence[NewRun]) -> bytes:
        segments = self._segments
        parts: list[bytes] = []
        for run_id, run in zip(ids, runs, strict=True):
            if run.idempotency_key is not None:  # COPY has no column for it
                raise StoreError("a run with an idempotency key cannot be enqueued by COPY")
            shared = _shared_fields(run)
            segment = segments.get(shared)
            if segment is None:
                segment = segments[shared] = self._segment(shared)
            payload = run.payload_json.encode()
            parts.append(segment)
            parts.append(_ID_AND_PAYLOAD_LENGTH.pack(8, run_id, len(payload) + 1))
            parts.append(JSONB_VERSION)
            parts.append(payload)
        return b"".join(parts)

    def _segment(self, shared: tuple[Any, ...]) -> bytes:
        """The field count and the shared columns of a run with these fields."""
        (namespace, handler, queue, priority, run_at, *middle) = shared
        (max_attempts, timeout, replay_of, job_id, slot_at, tags, *rest, labels) = middle
        run_at = self._db_now if run_at is None else run_at
        values = (
            namespace,
            handler,
            queue,
            priority,
            run_at,
            run_at - self._aging * priority,
            max_attempts,
            timeout,
            replay_of,
            job_id,
            slot_at,
            list(tags) if tags else None,  # sorted already
            *rest,
            dict(labels) if labels else None,  # jsonb's dumper writes the object
            self._db_now,
        )
        fields = self._transformer.dump_sequence(values, self._formats)
        return _FIELD_COUNT + b"".join(
            _NULL if field is None else struct.pack(">i", len(field)) + bytes(field)
            for field in fields
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

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        return await self.rows(query, params)  # the caller's transaction: the caller commits

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        if not items:
            return []
        return await self.rows(query, as_arrays(items, shared))

    async def copy_runs(self, runs: Sequence[NewRun], aging_seconds: float) -> list[int]:
        raise StoreError("COPY on a caller's sync connection is not used (copy=False)")
