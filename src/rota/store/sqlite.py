"""The SQLite store: rota's zero-infrastructure default.

One file in WAL mode shared by several worker processes on one machine. Each write is a
``BEGIN IMMEDIATE`` transaction, which takes SQLite's single writer lock up front, so a
claim is a compare-and-set that no other process can interleave with, and a busy
timeout queues writers instead of failing them with "database is locked".

sqlite3 is blocking, so each store owns one connection driven by one thread; the async
methods hand work to it. Instants are stored as REAL unix seconds.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

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
from rota.errors import InvalidTransition, RunNotFound, StoreError, StoreUnavailable
from rota.store.api_rows import api_key_from_row, audit_from_row, audit_params
from rota.store.port import ClaimRequest, LeaderInfo, SchemaStatus
from rota.store.queries import latest_version, load_migrations, load_queries
from rota.store.rows import attempt_from_row, job_from_row, log_from_row, run_from_row

Q = load_queries("sqlite")
T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000
LIMITED_ROUNDS = 4
_INSTANT_COLUMNS = (
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
)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _decoded(row: sqlite3.Row) -> dict[str, Any]:
    """A row as a dict with instants as datetimes and JSON columns decoded."""
    out = dict(row)
    for key in _INSTANT_COLUMNS:
        if key in out:
            out[key] = _dt(out[key])
    for key in ("payload", "result", "tags", "queues"):
        if key in out and out[key] is not None:
            out[key] = json.loads(out[key])
    return out


def _claimed(row: sqlite3.Row) -> ClaimedRun:
    return ClaimedRun(
        run_id=row[0],
        handler=row[1],
        payload=json.loads(row[2]),
        queue=row[3],
        attempt=row[4],
        max_attempts=row[5],
        fence=row[6],
        timeout=row[7],
        lost_count=row[8],
        idempotency_key=row[9],
        lease_expires_at=datetime.fromtimestamp(row[10], UTC),
        correlation_id=row[11],
    )


def path_from_url(url: str) -> str:
    """``sqlite:///rota.db`` is relative, ``sqlite:////var/rota.db`` absolute."""
    if not url.startswith("sqlite:///"):
        raise StoreError(f"not a SQLite URL: {url!r}")
    path = url.removeprefix("sqlite:///")
    return path or ":memory:"


class SqliteStore:
    dialect = "sqlite"
    supports_transactional_completion = False

    def __init__(self, url: str, *, aging_seconds: float = 60.0, poll_seconds: float = 0.05):
        self.url = url
        self.path = path_from_url(url)
        self.aging_seconds = aging_seconds
        self.poll_seconds = poll_seconds
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rota-sqlite")
        self._conn: sqlite3.Connection | None = None

    # -- plumbing -----------------------------------------------------------
    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, fn)

    def _guarded(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise StoreError("the SQLite store is not open")
        try:
            return fn(self._conn)
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(f"SQLite at {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite refused the operation: {exc}") from exc

    @staticmethod
    @contextmanager
    def _write(conn: sqlite3.Connection, now: datetime | None = None) -> Iterator[float]:
        """A write transaction that holds the writer lock from its first statement.

        Yields the instant the transaction treats as now: the caller's, or else the
        database clock's (on one machine, SQLite's clock is the machine's).
        """
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield now.timestamp() if now else conn.execute(Q["db_now"]).fetchone()[0]
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _connect(self) -> None:
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreUnavailable(f"SQLite: folder {parent} does not exist")
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode keeps commits durable against a process crash (what workers
        # do); only a power loss can drop the last transactions.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        self._conn = conn

    # -- lifecycle ----------------------------------------------------------
    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._connect)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite database {self.path}: {exc}") from exc

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)

    # -- schema -------------------------------------------------------------
    @staticmethod
    def _current_version(conn: sqlite3.Connection) -> int:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS rota_schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0))"
        )
        row = conn.execute("SELECT COALESCE(max(version), 0) FROM rota_schema_migrations")
        return int(row.fetchone()[0])

    async def schema_status(self) -> SchemaStatus:
        current = await self._call(self._current_version)
        return SchemaStatus(current, latest_version(self.dialect))

    async def migrate(self) -> list[int]:
        def work(conn: sqlite3.Connection) -> list[int]:
            applied = []
            with self._write(conn):
                current = self._current_version(conn)
                for migration in load_migrations(self.dialect)[current:]:
                    for statement in _statements(migration.sql):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO rota_schema_migrations (version, name) VALUES (?, ?)",
                        (migration.version, migration.name),
                    )
                    applied.append(migration.version)
            return applied

        return await self._call(work)

    # -- producing ----------------------------------------------------------
    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]:
        def work(conn: sqlite3.Connection) -> list[Enqueued]:
            with self._write(conn, now) as at:
                return self._insert_runs(conn, runs, at)

        return await self._call(work)

    def _insert_runs(
        self, conn: sqlite3.Connection, runs: Sequence[NewRun], at: float
    ) -> list[Enqueued]:
        results = []
        for run in runs:
            params = {
                "namespace": run.namespace,
                "handler": run.handler,
                "queue": run.queue,
                "payload": run.payload_json,
                "priority": run.priority,
                "run_at": _ts(run.run_at) or at,
                "aging_seconds": self.aging_seconds,
                "max_attempts": run.max_attempts,
                "timeout_seconds": run.timeout,
                "idempotency_key": run.idempotency_key,
                "replay_of": run.replay_of,
                "job_id": run.job_id,
                "slot_at": _ts(run.slot_at),
                "tags": json.dumps(sorted(run.tags)) if run.tags else None,
                "concurrency_key": run.concurrency_key,
                "concurrency_limit": run.concurrency_limit,
                "deadline": _ts(run.deadline),
                "correlation_id": run.correlation_id,
                "now": at,
            }
            row = conn.execute(Q["insert_run"], params).fetchone()
            if row is not None:
                results.append(Enqueued(row[0], created=True))
            else:
                existing = conn.execute(Q["existing_by_idempotency_key"], params)
                results.append(Enqueued(existing.fetchone()[0], created=False))
        return results

    # -- hot path -----------------------------------------------------------
    async def claim(self, request: ClaimRequest, now: datetime | None) -> list[ClaimedRun]:
        def work(conn: sqlite3.Connection) -> list[ClaimedRun]:
            reading = _ts(now) or conn.execute(Q["db_now"]).fetchone()[0]
            due = {"now": reading, "queues": json.dumps(list(request.queues))}
            if not conn.execute(Q["anything_due"], due).fetchone()[0]:
                return []
            # BEGIN IMMEDIATE serialises claimers: counting what runs and claiming within
            # the limits is one atomic step here, with no lock of our own.
            with self._write(conn, now) as at:
                # Once per queue: a queue listed twice would fill the limit with duplicates.
                queues = list(dict.fromkeys(request.queues))
                tags = json.dumps(sorted(set(request.tags)))
                limits = Limits.of(
                    [Limit.parse(*row) for row in conn.execute(Q["limits"]).fetchall()]
                )
                chosen = []
                if limits.global_max is None:
                    plain = [q for q in queues if q not in limits.queues]
                    chosen = self._plain_candidates(conn, plain, tags, limits, at, request.limit)
                want = request.limit - len(chosen)
                if want > 0:
                    chosen += self._limited_candidates(conn, queues, tags, limits, at, want)
                if not chosen:
                    return []
                rows = conn.execute(
                    Q["claim"],
                    {
                        "ids": json.dumps(chosen),
                        "worker_id": request.worker_id,
                        "now": at,
                        "lease_seconds": request.lease_seconds,
                    },
                ).fetchall()
            return [_claimed(row) for row in rows]

        return await self._call(work)

    @staticmethod
    def _plain_candidates(
        conn: sqlite3.Connection,
        queues: list[str],
        tags: str,
        limits: Limits,
        at: float,
        want: int,
    ) -> list[int]:
        candidates: list[tuple[float, int]] = []
        for queue in queues:
            found = conn.execute(
                Q["claim_candidates"],
                {
                    "queue": queue,
                    "now": at,
                    "limit": want,
                    "tags": tags,
                    "limited_handlers": json.dumps(list(limits.handlers)),
                },
            )
            candidates.extend((sort_at, run_id) for run_id, sort_at in found)
        return [run_id for _, run_id in sorted(candidates)[:want]]

    @staticmethod
    def _limited_candidates(
        conn: sqlite3.Connection,
        queues: list[str],
        tags: str,
        limits: Limits,
        at: float,
        want: int,
    ) -> list[int]:
        active = Active()
        for queue, handler, key, key_limit, count in conn.execute(Q["active_groups"]):
            active.add(queue, handler, key, key_limit, count)
        if active.global_full(limits):
            return []
        chosen: list[int] = []
        window = max(want * 4, 200)
        # A window full of runs whose key filled up is passed over: the next round skips
        # those keys in SQL. A few rounds bound the work while we hold the write lock.
        for _ in range(LIMITED_ROUNDS):
            full_queues = set(active.full_queues(limits))
            rows: list[tuple[Any, ...]] = []
            for queue in queues:
                if queue in full_queues:
                    continue
                rows += conn.execute(
                    Q["limited_candidates"],
                    {
                        "queue": queue,
                        "now": at,
                        "tags": tags,
                        "limited_handlers": json.dumps(list(limits.handlers)),
                        "queue_limited": queue in limits.queues,
                        "global_limit": limits.global_max is not None,
                        "full_keys": json.dumps(active.full_keys()),
                        "full_handlers": json.dumps(active.full_handlers(limits)),
                        "chosen": json.dumps(chosen),
                        "window": window,
                    },
                ).fetchall()
            rows.sort(key=lambda row: (row[5], row[0]))
            candidates = [Candidate(*row[:5]) for row in rows[:window]]
            chosen += choose(candidates, active, limits, want - len(chosen))
            if len(chosen) >= want or len(rows) < window:
                break
        return chosen

    async def renew(
        self, worker_id: str, leases: Sequence[Lease], lease_seconds: float, now: datetime | None
    ) -> RenewResult:
        def work(conn: sqlite3.Connection) -> RenewResult:
            rows = []
            with self._write(conn, now) as at:
                for lease in leases:
                    params = {
                        "id": lease.run_id,
                        "fence": lease.fence,
                        "now": at,
                        "lease_seconds": lease_seconds,
                    }
                    rows.extend(conn.execute(Q["renew"], params).fetchall())
            held = {row[0] for row in rows}
            return RenewResult(
                lost=frozenset(lease.run_id for lease in leases) - held,
                cancel_requested=frozenset(row[0] for row in rows if row[1]),
                lease_expires_at=_dt(min((row[2] for row in rows), default=None)),
            )

        if not leases:
            return RenewResult(frozenset(), frozenset(), None)
        return await self._call(work)

    async def complete(self, outcomes: Sequence[Outcome], now: datetime | None) -> set[int]:
        def work(conn: sqlite3.Connection) -> set[int]:
            # Only what this call writes counts: an outcome recorded by an earlier call is
            # stale here (recorded_outcomes answers the ambiguous-commit question).
            written = set()
            with self._write(conn, now) as at:
                for o in outcomes:
                    params = {
                        "id": o.run_id,
                        "fence": o.fence,
                        "state": o.state.value,
                        "outcome": o.attempt_outcome.value,
                        "result": o.result_json,
                        "error": o.error,
                        "attempt_error": o.error,
                        "retry_delay": o.retry_delay,
                        "now": at,
                    }
                    # The attempt row reads the run before the fenced update changes it.
                    if conn.execute(Q["record_attempt"], params).rowcount:
                        conn.execute(Q["complete"], params)
                        written.add(o.run_id)
            return written

        if not outcomes:
            return set()
        return await self._call(work)

    @staticmethod
    def _recorded(conn: sqlite3.Connection, outcomes: Sequence[Outcome]) -> set[int]:
        found = set()
        for o in outcomes:
            params = {"id": o.run_id, "fence": o.fence, "outcome": o.attempt_outcome.value}
            if conn.execute(Q["recorded_outcome"], params).fetchone():
                found.add(o.run_id)
        return found

    async def recorded_outcomes(self, outcomes: Sequence[Outcome]) -> set[int]:
        return await self._call(lambda conn: self._recorded(conn, outcomes))

    async def release(self, leases: Sequence[Lease], now: datetime | None) -> set[int]:
        def work(conn: sqlite3.Connection) -> set[int]:
            released = set()
            with self._write(conn, now) as at:
                for lease in leases:
                    params = {
                        "id": lease.run_id,
                        "fence": lease.fence,
                        "now": at,
                        "outcome": "released",
                        "attempt_error": "worker shut down before the run finished",
                    }
                    conn.execute(Q["record_attempt"], params)
                    if conn.execute(Q["release"], params).rowcount:
                        released.add(lease.run_id)
            return released

        return await self._call(work)

    async def append_logs(self, lines: Sequence[LogLine]) -> None:
        def work(conn: sqlite3.Connection) -> None:
            with self._write(conn):
                conn.executemany(
                    Q["append_log"],
                    [
                        {
                            "run_id": x.run_id,
                            "attempt": x.attempt,
                            "at": _ts(x.at),
                            "level": x.level,
                            "message": x.message,
                            "fields": x.fields_json,
                        }
                        for x in lines
                    ],
                )

        if lines:
            await self._call(work)

    # -- housekeeping -------------------------------------------------------
    @staticmethod
    def _term_holds(conn: sqlite3.Connection, leader_term: int | None) -> bool:
        return bool(conn.execute(Q["leader_term_holds"], {"term": leader_term}).fetchone()[0])

    async def reap_expired(
        self, now: datetime | None, poison_after: int, limit: int, leader_term: int | None = None
    ) -> list[ReapedRun]:
        def work(conn: sqlite3.Connection) -> list[ReapedRun]:
            reaped: list[ReapedRun] = []
            with self._write(conn, now) as at:
                if not self._term_holds(conn, leader_term):
                    return reaped
                expired = conn.execute(Q["expired_leases"], {"now": at, "limit": limit}).fetchall()
                for run_id, worker_id in expired:
                    params = {
                        "id": run_id,
                        "now": at,
                        "poison_after": poison_after,
                        "outcome": "lost",
                        "attempt_error": f"lease expired: worker {worker_id or '?'} "
                        "stopped renewing it",
                    }
                    fence = conn.execute(
                        "SELECT fence FROM rota_runs WHERE id = ?", (run_id,)
                    ).fetchone()[0]
                    conn.execute(Q["record_attempt"], {**params, "fence": fence})
                    for row in conn.execute(Q["reap"], params).fetchall():
                        reaped.append(ReapedRun(row[0], row[1], RunState(row[2])))
            return reaped

        return await self._call(work)

    async def prune_finished(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with self._write(conn):
                if not self._term_holds(conn, leader_term):
                    return 0
                params = {"older_than": _ts(older_than), "limit": limit}
                ids = json.dumps([row[0] for row in conn.execute(Q["prunable"], params)])
                conn.execute(Q["prune_attempts"], {"ids": ids})
                conn.execute(Q["prune_logs"], {"ids": ids})
                return conn.execute(Q["prune_runs"], {"ids": ids}).rowcount

        return await self._call(work)

    # -- reading and steering -----------------------------------------------
    async def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return await self._call(
            lambda conn: [_decoded(row) for row in conn.execute(Q[query], params)]
        )

    async def get_run(self, run_id: int) -> Run | None:
        rows = await self._rows("get_run", {"id": run_id})
        return run_from_row(rows[0]) if rows else None

    async def list_runs(self, run_filter: RunFilter) -> list[Run]:
        rows = await self._rows(
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
        return [attempt_from_row(row) for row in await self._rows("attempts", {"id": run_id})]

    async def logs(self, run_id: int) -> list[LogLine]:
        rows = await self._rows("logs", {"id": run_id})
        return [log_from_row(row, row["fields"]) for row in rows]

    async def request_cancel(self, run_id: int, now: datetime | None) -> Run:
        def work(conn: sqlite3.Connection) -> None:
            with self._write(conn, now) as at:
                params = {"id": run_id, "now": at}
                if not conn.execute(Q["cancel_waiting"], params).fetchall():
                    conn.execute(Q["request_cancel_active"], params).fetchall()

        await self._call(work)
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
        reading = await self._call(lambda conn: conn.execute(Q["db_now"]).fetchone()[0])
        return datetime.fromtimestamp(reading, UTC)

    async def _jobs(self, query: str, params: dict[str, Any]) -> list[Job]:
        return [job_from_row(row, row["spec"]) for row in await self._rows(query, params)]

    async def _write_jobs(
        self, query: str, params: dict[str, Any], now: datetime | None
    ) -> list[Job]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            with self._write(conn, now) as at:
                return [_decoded(row) for row in conn.execute(Q[query], {**params, "now": at})]

        return [job_from_row(row, row["spec"]) for row in await self._call(work)]

    async def save_job(
        self, spec: JobSpec, cursor: datetime, next_fire_at: datetime | None, now: datetime | None
    ) -> Job:
        params = {
            "namespace": spec.namespace,
            "name": spec.name,
            "spec": spec_to_json(spec),
            "cursor": _ts(cursor),
            "next_fire_at": _ts(next_fire_at),
        }
        [job] = await self._write_jobs("save_job", params, now)
        return job

    async def get_job(self, namespace: str, name: str) -> Job | None:
        jobs = await self._jobs("get_job", {"namespace": namespace, "name": name})
        return jobs[0] if jobs else None

    async def get_job_by_id(self, job_id: int) -> Job | None:
        jobs = await self._jobs("get_job_by_id", {"id": job_id})
        return jobs[0] if jobs else None

    async def list_jobs(self, namespace: str | None = None) -> list[Job]:
        return await self._jobs("list_jobs", {"namespace": namespace})

    async def delete_job(self, namespace: str, name: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            with self._write(conn):
                params = {"namespace": namespace, "name": name}
                return bool(conn.execute(Q["delete_job"], params).fetchall())

        return await self._call(work)

    async def set_job_paused(
        self,
        namespace: str,
        name: str,
        paused: bool,
        cursor: datetime,
        next_fire_at: datetime | None,
        now: datetime | None,
    ) -> Job | None:
        params = {
            "namespace": namespace,
            "name": name,
            "paused": paused,
            "cursor": _ts(cursor),
            "next_fire_at": _ts(next_fire_at),
        }
        jobs = await self._write_jobs("set_job_paused", params, now)
        return jobs[0] if jobs else None

    async def due_jobs(self, until: datetime, limit: int) -> list[Job]:
        return await self._jobs("due_jobs", {"until": _ts(until), "limit": limit})

    async def job_run_counts(self, job_id: int) -> tuple[int, int]:
        def work(conn: sqlite3.Connection) -> tuple[int, int]:
            active, waiting = conn.execute(Q["job_run_counts"], {"job_id": job_id}).fetchone()
            return int(active), int(waiting)

        return await self._call(work)

    async def advance_jobs(
        self, advances: Sequence[JobAdvance], now: datetime | None, leader_term: int | None
    ) -> set[int]:
        def work(conn: sqlite3.Connection) -> set[int]:
            advanced: set[int] = set()
            with self._write(conn, now) as at:
                for advance in advances:
                    params = {
                        "id": advance.job_id,
                        "expected_cursor": _ts(advance.expected_cursor),
                        "cursor": _ts(advance.cursor),
                        "next_fire_at": _ts(advance.next_fire_at),
                        "now": at,
                        "term": leader_term,
                    }
                    if conn.execute(Q["advance_job"], params).fetchall():
                        advanced.add(advance.job_id)
                        self._insert_runs(conn, advance.runs, at)
            return advanced

        if not advances:
            return set()
        return await self._call(work)

    # -- leadership ---------------------------------------------------------
    async def acquire_leadership(
        self, holder: str, term: int | None, lease_seconds: float, now: datetime | None
    ) -> int | None:
        def work(conn: sqlite3.Connection) -> int | None:
            with self._write(conn, now) as at:
                params = {"holder": holder, "term": term, "lease_seconds": lease_seconds, "now": at}
                row = conn.execute(Q["acquire_leadership"], params).fetchone()
            return int(row[0]) if row else None

        return await self._call(work)

    async def resign_leadership(self, holder: str, term: int, now: datetime | None) -> None:
        def work(conn: sqlite3.Connection) -> None:
            with self._write(conn, now) as at:
                params = {"holder": holder, "term": term, "now": at}
                conn.execute(Q["resign_leadership"], params)

        await self._call(work)

    async def leader(self) -> LeaderInfo | None:
        rows = await self._rows("leader", {})
        if not rows:
            return None
        row = rows[0]
        return LeaderInfo(row["holder"], row["term"], row["acquired_at"], row["expires_at"])

    # -- claim-time controls and the worker registry -------------------------
    async def _write_rows(
        self, query: str, params: dict[str, Any], now: datetime | None = None
    ) -> list[tuple[Any, ...]]:
        def work(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            with self._write(conn, now) as at:
                return [tuple(row) for row in conn.execute(Q[query], {**params, "now": at})]

        return await self._call(work)

    async def set_limit(self, limit: Limit) -> None:
        params = {"scope": limit.scope.value, "name": limit.name, "max_running": limit.max_running}
        await self._write_rows("set_limit", params)

    async def clear_limit(self, scope: str, name: str) -> bool:
        return bool(await self._write_rows("clear_limit", {"scope": scope, "name": name}))

    async def list_limits(self) -> list[Limit]:
        return [
            Limit.parse(r["scope"], r["name"], r["max_running"])
            for r in await self._rows("limits", {})
        ]

    async def expire_deadlines(
        self, now: datetime | None, leader_term: int | None = None
    ) -> list[int]:
        def work(conn: sqlite3.Connection) -> list[int]:
            with self._write(conn, now) as at:
                if not self._term_holds(conn, leader_term):
                    return []
                return [row[0] for row in conn.execute(Q["expire_deadlines"], {"now": at})]

        return await self._call(work)

    async def register_worker(self, worker: WorkerInfo, now: datetime | None) -> None:
        params = {
            "node_id": worker.node_id,
            "host": worker.host,
            "pid": worker.pid,
            "version": worker.version,
            "queues": json.dumps(list(worker.queues)),
            "tags": json.dumps(sorted(worker.tags)),
            "concurrency": worker.concurrency,
        }
        await self._write_rows("register_worker", params, now)

    async def worker_heartbeat(self, node_id: str, now: datetime | None) -> WorkerState | None:
        rows = await self._write_rows("worker_heartbeat", {"node_id": node_id}, now)
        return WorkerState(rows[0][0]) if rows else None

    async def set_worker_state(self, node_id: str, state: WorkerState) -> bool:
        params = {"node_id": node_id, "state": state.value}
        return bool(await self._write_rows("set_worker_state", params))

    async def deregister_worker(self, node_id: str) -> None:
        await self._write_rows("deregister_worker", {"node_id": node_id})

    async def list_workers(self) -> list[WorkerInfo]:
        return [
            WorkerInfo(
                r["node_id"],
                r["host"],
                r["pid"],
                r["version"],
                tuple(r["queues"]),
                tuple(r["tags"]),
                r["concurrency"],
                WorkerState(r["state"]),
                r["started_at"],
                r["heartbeat_at"],
            )
            for r in await self._rows("list_workers", {})
        ]

    async def mark_dead_workers(
        self, dead_after: float, now: datetime | None, leader_term: int | None = None
    ) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            with self._write(conn, now) as at:
                if not self._term_holds(conn, leader_term):
                    return []
                params = {"now": at, "dead_after": dead_after}
                dead = [row[0] for row in conn.execute(Q["silent_workers"], params)]
                for node_id in dead:
                    conn.execute(Q["mark_dead"], {"node_id": node_id})
                    conn.execute(Q["end_leases_of"], {"node_id": node_id, "now": at})
                return dead

        return await self._call(work)

    async def prune_workers(self, older_than: datetime) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with self._write(conn):
                params = {"older_than": _ts(older_than)}
                return conn.execute(Q["prune_workers"], params).rowcount

        return await self._call(work)

    async def unclaimable_runs(self, now: datetime | None, limit: int) -> list[UnclaimableRun]:
        def work(conn: sqlite3.Connection) -> list[UnclaimableRun]:
            at = _ts(now) or conn.execute(Q["db_now"]).fetchone()[0]
            rows = conn.execute(Q["unclaimable_runs"], {"now": at, "limit": limit})
            return [UnclaimableRun(r[0], r[1], tuple(json.loads(r[2]))) for r in rows]

        return await self._call(work)

    async def vacuum(self) -> None:
        # SQLite reuses freed pages by itself; refreshing the planner's statistics is
        # what keeps the claim on its index.
        await self._call(lambda conn: conn.execute("PRAGMA optimize"))

    async def wait_for_work(self, timeout: float) -> None:
        # SQLite has no notifications across processes; an indexed poll is cheap.
        await asyncio.sleep(min(timeout, self.poll_seconds))

    # -- api ------------------------------------------------------------------
    async def search_runs(self, search: RunSearch) -> list[Run]:
        rows = await self._rows(
            "search_runs",
            {
                "namespaces": self._json_array(search.namespaces),
                "states": self._json_array([s.value for s in search.states] or None),
                "handler": search.handler,
                "queue": search.queue,
                "tag": search.tag,
                "job_id": search.job_id,
                "created_after": _ts(search.created_after),
                "created_before": _ts(search.created_before),
                "pattern": like_pattern(search.text) if search.text else None,
                "before_id": search.before_id,
                "limit": search.limit,
            },
        )
        return [run_from_row(row) for row in rows]

    async def oldest_due_run_at(self, now: datetime | None) -> datetime | None:
        def work(conn: sqlite3.Connection) -> float | None:
            at = now.timestamp() if now else conn.execute(Q["db_now"]).fetchone()[0]
            value = conn.execute(Q["oldest_due_run_at"], {"now": at}).fetchone()[0]
            return None if value is None else float(value)

        return _dt(await self._call(work))

    async def _api_key_rows(
        self, query: str, params: dict[str, Any], now: datetime | None = None, write: bool = False
    ) -> list[ApiKey]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if not write:
                return [dict(row) for row in conn.execute(Q[query], params)]
            with self._write(conn, now) as at:
                return [dict(row) for row in conn.execute(Q[query], {**params, "now": at})]

        keys = []
        for row in await self._call(work):
            row.update(
                scopes=json.loads(row["scopes"]),
                namespaces=json.loads(row["namespaces"]),
                created_at=_dt(row["created_at"]),
                revoked_at=_dt(row["revoked_at"]),
            )
            keys.append(api_key_from_row(row))
        return keys

    async def create_api_key(self, key: NewApiKey, now: datetime | None) -> ApiKey:
        params = {
            "key_id": key.key_id,
            "secret_hash": key.secret_hash,
            "name": key.name,
            "scopes": json.dumps(list(key.scopes)),
            "namespaces": json.dumps(list(key.namespaces)),
            "created_by": key.created_by,
        }
        [created] = await self._api_key_rows("insert_api_key", params, now, write=True)
        return created

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        keys = await self._api_key_rows("get_api_key", {"key_id": key_id})
        return keys[0] if keys else None

    async def list_api_keys(self) -> list[ApiKey]:
        return await self._api_key_rows("list_api_keys", {})

    async def revoke_api_key(self, key_id: str, now: datetime | None) -> ApiKey | None:
        keys = await self._api_key_rows("revoke_api_key", {"key_id": key_id}, now, write=True)
        return keys[0] if keys else None

    async def append_audit(self, entry: NewAuditEntry, now: datetime | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with self._write(conn, now) as at:
                params = {**audit_params(entry), "now": at}
                return int(conn.execute(Q["append_audit"], params).fetchone()[0])

        return await self._call(work)

    async def list_audit(self, query: AuditQuery) -> list[AuditEntry]:
        rows = await self._rows(
            "list_audit",
            {
                "namespaces": self._json_array(query.namespaces),
                "before_id": query.before_id,
                "limit": query.limit,
            },
        )
        return [audit_from_row(row) for row in rows]

    @staticmethod
    def _json_array(values: Sequence[str] | None) -> str | None:
        return None if values is None else json.dumps(list(values))


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements (executescript would commit on its own)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise StoreError(f"migration ends with an incomplete statement: {buffer[:60]!r}")
