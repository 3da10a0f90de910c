"""The PostgreSQL store: psycopg 3 with an async pool.

Claims take batches with FOR UPDATE SKIP LOCKED; wake-ups come over LISTEN/NOTIFY with
polling as the fallback; the listener reconnects by itself after the server restarts.
Statements run in autocommit, one round trip each: every hot-path query is a single
statement, so it is atomic without an explicit transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

import psycopg
import psycopg_pool
import structlog
from psycopg.rows import dict_row

from rota.domain.access import ApiKey, AuditEntry, AuditQuery, NewApiKey, NewAuditEntry
from rota.domain.jobs import Job, JobAdvance, JobSpec, spec_to_json
from rota.domain.limits import Active, Candidate, Limit, Limits, choose
from rota.domain.runs import (
    Attempt,
    ClaimedRun,
    Enqueued,
    Lease,
    LogLine,
    NewRun,
    Outcome,
    ReapedRun,
    RenewResult,
    Run,
    RunFilter,
    replay_request,
)
from rota.domain.search import RunSearch, like_pattern
from rota.domain.states import RunState
from rota.domain.workers import UnclaimableRun, WorkerInfo, WorkerState
from rota.errors import (
    InvalidTransition,
    RunNotFound,
    StoreError,
    StoreUnavailable,
)
from rota.store.api_rows import api_key_from_row, audit_from_row, audit_params
from rota.store.port import ClaimRequest, LeaderInfo, SchemaStatus
from rota.store.queries import latest_version, load_migrations, load_queries
from rota.store.rows import attempt_from_row, job_from_row, log_from_row, run_from_row

log = structlog.get_logger("rota.store.postgres")

Q = load_queries("postgres")
LeaseT = TypeVar("LeaseT", Lease, Outcome)
NOTIFY_CHANNEL = "rota_wakeup"
COPY_THRESHOLD = 200
LIMITED_ROUNDS = 4  # below this, one INSERT ... unnest is cheaper than COPY's setup
MIGRATION_LOCK = 0x726F7461  # "rota": an advisory lock so concurrent starters migrate once
# Keepalives catch a half-open TCP connection, which otherwise raises nothing.
CONNECT_OPTIONS: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "connect_timeout": 5,
}


def _columns(runs: Sequence[NewRun]) -> dict[str, list[Any]]:
    return {
        "namespaces": [r.namespace for r in runs],
        "handlers": [r.handler for r in runs],
        "queues": [r.queue for r in runs],
        "payloads": [r.payload_json for r in runs],
        "priorities": [r.priority for r in runs],
        "run_ats": [r.run_at for r in runs],
        "max_attempts": [r.max_attempts for r in runs],
        "timeouts": [r.timeout for r in runs],
        "idempotency_keys": [r.idempotency_key for r in runs],
        "replay_ofs": [r.replay_of for r in runs],
        "job_ids": [r.job_id for r in runs],
        "slot_ats": [r.slot_at for r in runs],
        # unnest cannot take an array of arrays of different lengths: each run's tags
        # travel as one array literal, cast back to text[] in SQL.
        "tag_lists": [_array_literal(r.tags) for r in runs],
        "concurrency_keys": [r.concurrency_key for r in runs],
        "concurrency_limits": [r.concurrency_limit for r in runs],
        "deadlines": [r.deadline for r in runs],
        "correlation_ids": [r.correlation_id for r in runs],
    }


def _array_literal(values: Sequence[str]) -> str:
    """A PostgreSQL array literal; names are checked (no quotes or commas) upstream."""
    return "{" + ",".join(f'"{v}"' for v in sorted(values)) + "}"


def _in_lock_order(items: Sequence[LeaseT]) -> list[LeaseT]:
    """Multi-row writes (renew, complete, release) lock their rows in id order: two of
    them on overlapping runs (a heartbeat and a completion of the same worker) then wait
    for each other instead of deadlocking."""
    return sorted(items, key=lambda item: item.run_id)


def _lease_arrays(leases: Sequence[Lease | Outcome]) -> dict[str, list[int]]:
    return {"ids": [x.run_id for x in leases], "fences": [x.fence for x in leases]}


class PostgresHandlerTransaction:
    """A transaction lent to a handler; it commits only together with the run's outcome."""

    def __init__(self, connection: psycopg.AsyncConnection[Any], stack: AsyncExitStack) -> None:
        self.connection = connection
        self._stack = stack
        self._finished = False

    async def commit_with(self, outcome: Outcome, aging_now: datetime | None) -> bool:
        """Write ``outcome`` fenced inside this transaction and commit both, or neither."""
        if self._finished:
            raise StoreError("handler transaction already finished")
        try:
            written = await _complete_on(self.connection, [outcome], aging_now)
        except BaseException:
            await self.rollback()
            raise
        if outcome.run_id not in written:
            await self.rollback()
            return False
        self._finished = True
        with _translated():
            await self._stack.aclose()
        return True

    async def rollback(self) -> None:
        if self._finished:
            return
        self._finished = True
        with _translated(), contextlib.suppress(psycopg.Error):
            await self._stack.__aexit__(psycopg.Rollback, psycopg.Rollback(), None)


async def _complete_on(
    conn: psycopg.AsyncConnection[Any], outcomes: Sequence[Outcome], now: datetime | None
) -> set[int]:
    outcomes = _in_lock_order(outcomes)
    params = {
        **_lease_arrays(outcomes),
        "states": [o.state.value for o in outcomes],
        "outcomes": [o.attempt_outcome.value for o in outcomes],
        "results": [o.result_json for o in outcomes],
        "errors": [o.error for o in outcomes],
        "retry_delays": [o.retry_delay for o in outcomes],
        "now": now,
    }
    with _translated():
        cur = await conn.execute(Q["complete"], params)
        return {row[0] for row in await cur.fetchall() if row[0] is not None}


@contextlib.contextmanager
def _translated() -> Any:
    """Driver errors become rota errors; nothing above the store sees psycopg."""
    try:
        yield
    except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
        raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}".strip()) from exc
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL refused the operation: {exc}".strip()) from exc


class PostgresStore:
    dialect = "postgres"
    supports_transactional_completion = True

    def __init__(self, url: str, *, aging_seconds: float = 60.0, pool_size: int = 4) -> None:
        self.url = url
        self.aging_seconds = aging_seconds
        self._pool = psycopg_pool.AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max(pool_size, 2),
            open=False,
            kwargs={"autocommit": True, **CONNECT_OPTIONS, "options": "-c timezone=UTC"},
            timeout=10,
        )
        self._wakeup = asyncio.Event()
        self._limits_cache: tuple[float, Limits] | None = None
        self._listener: asyncio.Task[None] | None = None

    # -- lifecycle ----------------------------------------------------------
    async def open(self) -> None:
        # One direct connection first: a server that is down gives one clear error at
        # once, instead of the pool's retries and warnings for ten seconds.
        try:
            probe = await psycopg.AsyncConnection.connect(self.url, **CONNECT_OPTIONS)
            await probe.close()
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: {_first_line(exc)}"
            ) from exc
        try:
            await self._pool.open(wait=True, timeout=10)
        except psycopg_pool.PoolTimeout as exc:
            await self._pool.close()
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: no connection within 10 s"
            ) from exc

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        await self._pool.close()

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        with _translated():
            async with self._pool.connection() as conn:
                yield conn

    async def _fetch(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self._conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(Q[query], params)
            return await cur.fetchall() if cur.description else []

    async def _tuples(self, query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self._conn() as conn:
            cur = await conn.execute(Q[query], params)
            return await cur.fetchall() if cur.description else []

    # -- schema -------------------------------------------------------------
    async def schema_status(self) -> SchemaStatus:
        async with self._conn() as conn:
            return SchemaStatus(await _current_version(conn), latest_version(self.dialect))

    async def migrate(self) -> list[int]:
        applied: list[int] = []
        async with self._conn() as conn:
            await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            try:
                current = await _current_version(conn)
                for migration in load_migrations(self.dialect)[current:]:
                    async with conn.transaction():
                        await conn.execute(migration.sql.encode())
                        await conn.execute(
                            "INSERT INTO rota_schema_migrations (version, name) VALUES (%s, %s)",
                            (migration.version, migration.name),
                        )
                    applied.append(migration.version)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        return applied

    # -- producing ----------------------------------------------------------
    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]:
        async with self._conn() as conn:
            return await self.enqueue_on(conn, runs, now)

    async def enqueue_on(
        self, conn: psycopg.AsyncConnection[Any], runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        """Enqueue on a given connection, inside whatever transaction it has open."""
        if not runs:
            return []
        with _translated():
            if len(runs) >= COPY_THRESHOLD and all(r.idempotency_key is None for r in runs):
                return await self._copy_runs(conn, runs, now)
            return await self._insert_runs(conn, runs, now)

    async def _insert_runs(
        self, conn: psycopg.AsyncConnection[Any], runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        params = {**_columns(runs), "now": now, "aging_seconds": self.aging_seconds}
        cur = await conn.execute(Q["insert_runs"], params)
        inserted = await cur.fetchall()
        if len(inserted) == len(runs) and len(runs) == 1:
            return [Enqueued(inserted[0][0], created=True)]
        # Map rows back by (namespace, handler, key): a key is unique only within its
        # namespace and handler, and may repeat within one batch (ON CONFLICT then keeps
        # the first). Unkeyed rows never conflict and come back in input order because
        # ids are drawn from one sequence in scan order.
        by_key = {(ns, h, k): run_id for run_id, ns, h, k in inserted if k is not None}
        unkeyed = sorted(run_id for run_id, _, _, k in inserted if k is None)
        missing = {
            r.idempotency_key
            for r in runs
            if r.idempotency_key is not None
            and (r.namespace, r.handler, r.idempotency_key) not in by_key
        }
        existing: dict[tuple[str, str, str], int] = {}
        if missing:
            cur = await conn.execute(Q["existing_by_idempotency_key"], {"keys": list(missing)})
            existing = {(ns, h, k): i for i, ns, h, k in await cur.fetchall()}
        results: list[Enqueued] = []
        unkeyed_iter = iter(unkeyed)
        for run in runs:
            if run.idempotency_key is None:
                results.append(Enqueued(next(unkeyed_iter), created=True))
                continue
            key = (run.namespace, run.handler, run.idempotency_key)
            if key in by_key:
                # The first run with this key created it; later ones in the batch match it.
                existing[key] = by_key.pop(key)
                results.append(Enqueued(existing[key], created=True))
            else:
                results.append(Enqueued(existing[key], created=False))
        return results

    async def _copy_runs(
        self, conn: psycopg.AsyncConnection[Any], runs: Sequence[NewRun], now: datetime | None
    ) -> list[Enqueued]:
        # COPY returns nothing, so ids are drawn first; both steps share a transaction.
        async with conn.transaction():
            cur = await conn.execute(Q["reserve_ids"], {"count": len(runs), "now": now})
            reserved = await cur.fetchall()
            db_now: datetime = reserved[0][1]
            aging = timedelta(seconds=self.aging_seconds)
            async with conn.cursor().copy(Q["copy_runs"]) as copy:
                for (run_id, _), run in zip(reserved, runs, strict=True):
                    run_at = run.run_at or db_now
                    await copy.write_row(
                        (
                            run_id,
                            run.namespace,
                            run.handler,
                            run.queue,
                            run.payload_json,
                            run.priority,
                            run_at,
                            run_at - aging * run.priority,
                            run.max_attempts,
                            run.timeout,
                            run.replay_of,
                            run.job_id,
                            run.slot_at,
                            sorted(run.tags) or None,
                            run.concurrency_key,
                            run.concurrency_limit,
                            run.deadline,
                            run.correlation_id,
                            db_now,
                        )
                    )
        return [Enqueued(run_id, created=True) for run_id, _ in reserved]

    # -- hot path -----------------------------------------------------------
    async def claim(self, request: ClaimRequest, now: datetime | None) -> list[ClaimedRun]:
        # A queue listed twice would pick its runs twice and fill the limit with
        # duplicates.
        queues = list(dict.fromkeys(request.queues))
        tags = sorted(set(request.tags))
        async with self._conn() as conn:
            limits = await self._limits(conn)
            claimed: list[ClaimedRun] = []
            plain = (
                []
                if limits.global_max is not None
                else [q for q in queues if q not in limits.queues]
            )
            if plain:
                cur = await conn.execute(
                    Q["claim"],
                    {
                        "queues": plain,
                        "limit": request.limit,
                        "worker_id": request.worker_id,
                        "lease_seconds": request.lease_seconds,
                        "tags": tags,
                        "limited_handlers": list(limits.handlers),
                        "now": now,
                    },
                )
                claimed = [ClaimedRun(*row) for row in await cur.fetchall()]
            want = request.limit - len(claimed)
            if want > 0 and (limits.any or await self._has_keyed_work(conn, queues, now)):
                claimed += await self._claim_limited(conn, request, queues, tags, limits, want, now)
            return claimed

    async def _limits(self, conn: psycopg.AsyncConnection[Any]) -> Limits:
        """Limits change rarely; read them at most once a second per store."""
        if self._limits_cache is None or time.monotonic() - self._limits_cache[0] > 1.0:
            cur = await conn.execute(Q["limits"])
            limits = Limits.of([Limit.parse(*row) for row in await cur.fetchall()])
            self._limits_cache = (time.monotonic(), limits)
        return self._limits_cache[1]

    async def _has_keyed_work(
        self, conn: psycopg.AsyncConnection[Any], queues: list[str], now: datetime | None
    ) -> bool:
        cur = await conn.execute(Q["has_keyed_work"], {"queues": queues, "now": now})
        row = await cur.fetchone()
        return bool(row and row[0])

    async def _claim_limited(
        self,
        conn: psycopg.AsyncConnection[Any],
        request: ClaimRequest,
        queues: list[str],
        tags: list[str],
        limits: Limits,
        want: int,
        now: datetime | None,
    ) -> list[ClaimedRun]:
        """Claim runs some limit applies to, one claimer at a time cluster-wide."""
        try:
            async with conn.transaction():
                await conn.execute(Q["claim_lock"])
                chosen = await self._choose_limited(conn, queues, tags, limits, want, now)
                if not chosen:
                    return []
                cur = await conn.execute(
                    Q["claim_ids"],
                    {
                        "ids": chosen,
                        "worker_id": request.worker_id,
                        "lease_seconds": request.lease_seconds,
                        "now": now,
                    },
                )
                return [ClaimedRun(*row) for row in await cur.fetchall()]
        except psycopg.errors.LockNotAvailable:
            log.info("limited claim skipped: another claimer holds the limits lock")
            return []

    async def _choose_limited(
        self,
        conn: psycopg.AsyncConnection[Any],
        queues: list[str],
        tags: list[str],
        limits: Limits,
        want: int,
        now: datetime | None,
    ) -> list[int]:
        """Under the limits lock: what runs now, and which candidates fit."""
        active = Active()
        cur = await conn.execute(Q["active_groups"])
        for queue, handler, key, key_limit, count in await cur.fetchall():
            active.add(queue, handler, key, key_limit, count)
        if active.global_full(limits):
            return []
        chosen: list[int] = []
        window = max(want * 4, 200)
        # A window full of runs whose key filled up is passed over: the next round
        # skips those keys in SQL. A few rounds bound the work under the lock.
        for _ in range(LIMITED_ROUNDS):
            full_queues = set(active.full_queues(limits))
            cur = await conn.execute(
                Q["limited_candidates"],
                {
                    "queues": [q for q in queues if q not in full_queues],
                    "tags": tags,
                    "limited_handlers": list(limits.handlers),
                    "limited_queues": list(limits.queues),
                    "global_limit": limits.global_max is not None,
                    "full_keys": active.full_keys(),
                    "full_handlers": active.full_handlers(limits),
                    "chosen": chosen,
                    "window": window,
                    "now": now,
                },
            )
            candidates = [Candidate(*row) for row in await cur.fetchall()]
            chosen += choose(candidates, active, limits, want - len(chosen))
            if len(chosen) >= want or len(candidates) < window:
                break
        return chosen

    async def renew(
        self, worker_id: str, leases: Sequence[Lease], lease_seconds: float, now: datetime | None
    ) -> RenewResult:
        if not leases:
            return RenewResult(frozenset(), frozenset(), None)
        rows = await self._tuples(
            "renew",
            {**_lease_arrays(_in_lock_order(leases)), "lease_seconds": lease_seconds, "now": now},
        )
        held = {row[0] for row in rows}
        return RenewResult(
            lost=frozenset(lease.run_id for lease in leases) - held,
            cancel_requested=frozenset(row[0] for row in rows if row[1]),
            lease_expires_at=min((row[2] for row in rows), default=None),
        )

    async def complete(self, outcomes: Sequence[Outcome], now: datetime | None) -> set[int]:
        if not outcomes:
            return set()
        async with self._conn() as conn:
            return await _complete_on(conn, outcomes, now)

    async def recorded_outcomes(self, outcomes: Sequence[Outcome]) -> set[int]:
        params = {
            **_lease_arrays(outcomes),
            "outcomes": [o.attempt_outcome.value for o in outcomes],
        }
        rows = await self._tuples("recorded_outcomes", params)
        return {row[0] for row in rows}

    async def release(self, leases: Sequence[Lease], now: datetime | None) -> set[int]:
        if not leases:
            return set()
        rows = await self._tuples("release", {**_lease_arrays(_in_lock_order(leases)), "now": now})
        return {row[0] for row in rows}

    async def append_logs(self, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        await self._tuples(
            "append_logs",
            {
                "run_ids": [x.run_id for x in lines],
                "attempts": [x.attempt for x in lines],
                "ats": [x.at for x in lines],
                "levels": [x.level for x in lines],
                "messages": [x.message for x in lines],
                "fields": [x.fields_json for x in lines],
            },
        )

    async def begin_handler_transaction(self) -> PostgresHandlerTransaction:
        stack = AsyncExitStack()
        with _translated():
            conn = await stack.enter_async_context(self._pool.connection())
            await stack.enter_async_context(conn.transaction())
        return PostgresHandlerTransaction(conn, stack)

    # -- housekeeping -------------------------------------------------------
    async def reap_expired(
        self, now: datetime | None, poison_after: int, limit: int, leader_term: int | None = None
    ) -> list[ReapedRun]:
        rows = await self._tuples(
            "reap_expired",
            {"now": now, "poison_after": poison_after, "limit": limit, "term": leader_term},
        )
        return [ReapedRun(row[0], row[1], RunState(row[2])) for row in rows]

    async def prune_finished(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        async with self._conn() as conn:
            cur = await conn.execute(
                Q["prune_finished"], {"older_than": older_than, "limit": limit, "term": leader_term}
            )
            return cur.rowcount

    # -- reading and steering -----------------------------------------------
    async def get_run(self, run_id: int) -> Run | None:
        rows = await self._fetch("get_run", {"id": run_id})
        return run_from_row(rows[0]) if rows else None

    async def list_runs(self, run_filter: RunFilter) -> list[Run]:
        rows = await self._fetch(
            "list_runs",
            {
                "state": run_filter.state.value if run_filter.state else None,
                "handler": run_filter.handler,
                "queue": run_filter.queue,
                "before_id": run_filter.before_id,
                "limit": run_filter.limit,
            },
        )
        return [run_from_row(row) for row in rows]

    async def attempts(self, run_id: int) -> list[Attempt]:
        return [attempt_from_row(row) for row in await self._fetch("attempts", {"id": run_id})]

    async def logs(self, run_id: int) -> list[LogLine]:
        rows = await self._fetch("logs", {"id": run_id})
        return [log_from_row(row, json.dumps(row["fields"])) for row in rows]

    async def request_cancel(self, run_id: int, now: datetime | None) -> Run:
        if not await self._tuples("cancel_waiting", {"id": run_id, "now": now}):
            await self._tuples("request_cancel_active", {"id": run_id})
        run = await self.get_run(run_id)
        if run is None:
            raise RunNotFound(run_id)
        if run.state.is_terminal and run.state is not RunState.CANCELLED:
            raise InvalidTransition(run_id, run.state.value, "cancel")
        return run

    async def replay(self, run_id: int, now: datetime | None) -> int:
        [enqueued] = await self.enqueue([replay_request(run_id, await self.get_run(run_id))], now)
        return enqueued.run_id

    # -- jobs and schedules -------------------------------------------------
    async def now(self, now: datetime | None) -> datetime:
        if now is not None:
            return now
        rows = await self._tuples("db_now", {"now": None})
        return rows[0][0]  # type: ignore[no-any-return]

    async def save_job(
        self, spec: JobSpec, cursor: datetime, next_fire_at: datetime | None, now: datetime | None
    ) -> Job:
        rows = await self._fetch(
            "save_job",
            {
                "namespace": spec.namespace,
                "name": spec.name,
                "spec": spec_to_json(spec),
                "cursor": cursor,
                "next_fire_at": next_fire_at,
                "now": now,
            },
        )
        return _job(rows[0])

    async def get_job(self, namespace: str, name: str) -> Job | None:
        rows = await self._fetch("get_job", {"namespace": namespace, "name": name})
        return _job(rows[0]) if rows else None

    async def get_job_by_id(self, job_id: int) -> Job | None:
        rows = await self._fetch("get_job_by_id", {"id": job_id})
        return _job(rows[0]) if rows else None

    async def list_jobs(self, namespace: str | None = None) -> list[Job]:
        return [_job(row) for row in await self._fetch("list_jobs", {"namespace": namespace})]

    async def delete_job(self, namespace: str, name: str) -> bool:
        return bool(await self._tuples("delete_job", {"namespace": namespace, "name": name}))

    async def set_job_paused(
        self,
        namespace: str,
        name: str,
        paused: bool,
        cursor: datetime,
        next_fire_at: datetime | None,
        now: datetime | None,
    ) -> Job | None:
        rows = await self._fetch(
            "set_job_paused",
            {
                "namespace": namespace,
                "name": name,
                "paused": paused,
                "cursor": cursor,
                "next_fire_at": next_fire_at,
                "now": now,
            },
        )
        return _job(rows[0]) if rows else None

    async def due_jobs(self, until: datetime, limit: int) -> list[Job]:
        rows = await self._fetch("due_jobs", {"until": until, "limit": limit})
        return [_job(row) for row in rows]

    async def job_run_counts(self, job_id: int) -> tuple[int, int]:
        [(active, waiting)] = await self._tuples("job_run_counts", {"job_id": job_id})
        return int(active), int(waiting)

    async def advance_jobs(
        self, advances: Sequence[JobAdvance], now: datetime | None, leader_term: int | None
    ) -> set[int]:
        if not advances:
            return set()
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute(
                Q["advance_jobs"],
                {
                    "ids": [a.job_id for a in advances],
                    "expected": [a.expected_cursor for a in advances],
                    "cursors": [a.cursor for a in advances],
                    "next_fire_ats": [a.next_fire_at for a in advances],
                    "now": now,
                    "term": leader_term,
                },
            )
            advanced = {row[0] for row in await cur.fetchall()}
            runs = [run for a in advances if a.job_id in advanced for run in a.runs]
            await self.enqueue_on(conn, runs, now)
        return advanced

    # -- leadership ---------------------------------------------------------
    async def acquire_leadership(
        self, holder: str, term: int | None, lease_seconds: float, now: datetime | None
    ) -> int | None:
        rows = await self._tuples(
            "acquire_leadership",
            {"holder": holder, "term": term, "lease_seconds": lease_seconds, "now": now},
        )
        return int(rows[0][0]) if rows else None

    async def resign_leadership(self, holder: str, term: int, now: datetime | None) -> None:
        await self._tuples("resign_leadership", {"holder": holder, "term": term, "now": now})

    async def leader(self) -> LeaderInfo | None:
        rows = await self._tuples("leader", {})
        return LeaderInfo(*rows[0]) if rows else None

    # -- claim-time controls and the worker registry -------------------------
    async def set_limit(self, limit: Limit) -> None:
        params = {"scope": limit.scope.value, "name": limit.name, "max_running": limit.max_running}
        await self._tuples("set_limit", params)
        self._limits_cache = None

    async def clear_limit(self, scope: str, name: str) -> bool:
        self._limits_cache = None
        return bool(await self._tuples("clear_limit", {"scope": scope, "name": name}))

    async def list_limits(self) -> list[Limit]:
        return [Limit.parse(*row) for row in await self._tuples("limits", {})]

    async def expire_deadlines(
        self, now: datetime | None, leader_term: int | None = None
    ) -> list[int]:
        rows = await self._tuples("expire_deadlines", {"now": now, "term": leader_term})
        return [row[0] for row in rows]

    async def register_worker(self, worker: WorkerInfo, now: datetime | None) -> None:
        await self._tuples(
            "register_worker",
            {
                "node_id": worker.node_id,
                "host": worker.host,
                "pid": worker.pid,
                "version": worker.version,
                "queues": list(worker.queues),
                "tags": sorted(worker.tags),
                "concurrency": worker.concurrency,
                "now": now,
            },
        )

    async def worker_heartbeat(self, node_id: str, now: datetime | None) -> WorkerState | None:
        rows = await self._tuples("worker_heartbeat", {"node_id": node_id, "now": now})
        return WorkerState(rows[0][0]) if rows else None

    async def set_worker_state(self, node_id: str, state: WorkerState) -> bool:
        params = {"node_id": node_id, "state": state.value}
        return bool(await self._tuples("set_worker_state", params))

    async def deregister_worker(self, node_id: str) -> None:
        await self._tuples("deregister_worker", {"node_id": node_id})

    async def list_workers(self) -> list[WorkerInfo]:
        return [_worker(row) for row in await self._tuples("list_workers", {})]

    async def mark_dead_workers(
        self, dead_after: float, now: datetime | None, leader_term: int | None = None
    ) -> list[str]:
        rows = await self._tuples(
            "mark_dead_workers", {"dead_after": dead_after, "now": now, "term": leader_term}
        )
        return [row[0] for row in rows]

    async def prune_workers(self, older_than: datetime) -> int:
        async with self._conn() as conn:
            cur = await conn.execute(Q["prune_workers"], {"older_than": older_than})
            return cur.rowcount

    async def unclaimable_runs(self, now: datetime | None, limit: int) -> list[UnclaimableRun]:
        rows = await self._tuples("unclaimable_runs", {"now": now, "limit": limit})
        return [UnclaimableRun(row[0], row[1], tuple(row[2])) for row in rows]

    async def vacuum(self) -> None:
        # Autovacuum may be off or too slow for a queue's churn (ANCHORS: claim throughput
        # fell 70% in 40 s without it). VACUUM needs autocommit, which pool connections
        # have; it does not block readers or writers.
        async with self._conn() as conn:
            await conn.execute("VACUUM (ANALYZE) rota_runs")
            await conn.execute("VACUUM rota_attempts, rota_run_logs, rota_jobs, rota_workers")

    # -- wake-ups -----------------------------------------------------------
    async def wait_for_work(self, timeout: float) -> None:
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen(), name="rota-listen")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        self._wakeup.clear()

    async def _listen(self) -> None:
        """Keep one LISTEN connection alive; after any break, reconnect and wake the
        worker, since notifications sent while we were away are lost."""
        backoff = 0.1
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, **CONNECT_OPTIONS
                ) as conn:
                    await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    backoff = 0.1
                    self._wakeup.set()
                    while True:
                        async for _ in conn.notifies(timeout=5.0):
                            self._wakeup.set()
                        await conn.execute("SELECT 1")  # raises if the link died quietly
            except asyncio.CancelledError:
                raise
            except psycopg.Error as exc:
                log.warning("listen connection lost; reconnecting", error=str(exc), backoff=backoff)
                self._wakeup.set()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    # -- api ------------------------------------------------------------------
    async def search_runs(self, search: RunSearch) -> list[Run]:
        rows = await self._fetch(
            "search_runs",
            {
                "namespaces": list(search.namespaces) if search.namespaces is not None else None,
                "states": [s.value for s in search.states] or None,
                "handler": search.handler,
                "queue": search.queue,
                "tag": search.tag,
                "job_id": search.job_id,
                "created_after": search.created_after,
                "created_before": search.created_before,
                "pattern": like_pattern(search.text) if search.text else None,
                "before_id": search.before_id,
                "limit": search.limit,
            },
        )
        return [run_from_row(row) for row in rows]

    async def oldest_due_run_at(self, now: datetime | None) -> datetime | None:
        rows = await self._tuples("oldest_due_run_at", {"now": now})
        return rows[0][0] if rows else None

    async def create_api_key(self, key: NewApiKey, now: datetime | None) -> ApiKey:
        rows = await self._fetch(
            "insert_api_key",
            {
                "key_id": key.key_id,
                "secret_hash": key.secret_hash,
                "name": key.name,
                "scopes": list(key.scopes),
                "namespaces": list(key.namespaces),
                "created_by": key.created_by,
                "now": now,
            },
        )
        return api_key_from_row(rows[0])

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        rows = await self._fetch("get_api_key", {"key_id": key_id})
        return api_key_from_row(rows[0]) if rows else None

    async def list_api_keys(self) -> list[ApiKey]:
        return [api_key_from_row(row) for row in await self._fetch("list_api_keys", {})]

    async def revoke_api_key(self, key_id: str, now: datetime | None) -> ApiKey | None:
        rows = await self._fetch("revoke_api_key", {"key_id": key_id, "now": now})
        return api_key_from_row(rows[0]) if rows else None

    async def append_audit(self, entry: NewAuditEntry, now: datetime | None) -> int:
        rows = await self._tuples("append_audit", {**audit_params(entry), "now": now})
        return int(rows[0][0])

    async def list_audit(self, query: AuditQuery) -> list[AuditEntry]:
        rows = await self._fetch(
            "list_audit",
            {
                "namespaces": list(query.namespaces) if query.namespaces is not None else None,
                "before_id": query.before_id,
                "limit": query.limit,
            },
        )
        return [audit_from_row(row) for row in rows]


async def _current_version(conn: psycopg.AsyncConnection[Any]) -> int:
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS rota_schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    cur = await conn.execute("SELECT COALESCE(max(version), 0) FROM rota_schema_migrations")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


def _worker(row: tuple[Any, ...]) -> WorkerInfo:
    node_id, host, pid, version, queues, tags, concurrency, state, started, beat = row
    return WorkerInfo(
        node_id,
        host,
        pid,
        version,
        tuple(queues),
        tuple(tags),
        concurrency,
        WorkerState(state),
        started,
        beat,
    )


def _job(row: dict[str, Any]) -> Job:
    return job_from_row(row, row["spec"])


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _redact(url: str) -> str:
    """Hide a password in a URL before it goes into a message."""
    import re

    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def enqueue_on_sync_connection(
    conn: Any, run: NewRun, now: datetime | None, aging_seconds: float
) -> int:
    """``app.enqueue(..., connection=conn)`` for a plain psycopg connection: the run is
    inserted inside the caller's transaction and exists only if the caller commits."""
    if not isinstance(conn, psycopg.Connection):
        raise StoreError(
            f"connection must be a psycopg.Connection (use enqueue_async for async ones), "
            f"got {type(conn).__name__}"
        )
    params = {**_columns([run]), "now": now, "aging_seconds": aging_seconds}
    with _translated():
        row = conn.execute(Q["insert_runs"], params).fetchone()
        if row is not None:
            return int(row[0])
        existing = conn.execute(
            Q["existing_by_idempotency_key"], {"keys": [run.idempotency_key]}
        ).fetchall()
        for run_id, namespace, handler, _ in existing:
            if (namespace, handler) == (run.namespace, run.handler):
                return int(run_id)
    raise StoreError(f"run with idempotency key {run.idempotency_key!r} vanished")
