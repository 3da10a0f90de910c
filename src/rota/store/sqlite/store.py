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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from rota.domain.limits import Active, Candidate, Limit, Limits, choose
from rota.domain.runs import (
    ClaimedRun,
    Lease,
    LogLine,
    Outcome,
    ReapedRun,
    RenewResult,
    Run,
    replay_request,
)
from rota.domain.states import RunState
from rota.errors import InvalidTransition, RunNotFound, StoreUnavailable
from rota.store.port import ClaimRequest, SchemaStatus
from rota.store.queries import latest_version, load_migrations
from rota.store.reading import RunReads
from rota.store.sqlite.api import SqliteApi
from rota.store.sqlite.base import (
    BUSY_TIMEOUT_MS,
    LIMITED_ROUNDS,
    Q,
    _claimed,
    _dt,
    _statements,
    _ts,
    path_from_url,
)
from rota.store.sqlite.jobs import SqliteJobs
from rota.store.sqlite.registry import SqliteRegistry


class SqliteStore(SqliteJobs, SqliteRegistry, SqliteApi, RunReads):
    dialect = "sqlite"
    supports_notify = False
    supports_copy = False
    supports_handler_transactions = False

    def __init__(self, url: str, *, aging_seconds: float = 60.0, poll_seconds: float = 0.05):
        self.url = url
        self.path = path_from_url(url)
        self.aging_seconds = aging_seconds
        self.poll_seconds = poll_seconds
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rota-sqlite")
        self._conn: sqlite3.Connection | None = None

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
            if conn.execute(Q["recorded_outcomes"], params).fetchone():
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
                    Q["append_logs"],
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

    async def vacuum(self) -> None:
        # SQLite reuses freed pages by itself; refreshing the planner's statistics is
        # what keeps the claim on its index.
        await self._call(lambda conn: conn.execute("PRAGMA optimize"))

    async def next_due_in(self, queues: Sequence[str], now: datetime | None) -> float | None:
        return None  # idle workers poll every sqlite_poll_seconds: nothing to wake for

    async def wait_for_work(self, timeout: float) -> None:
        # SQLite has no notifications across processes; an indexed poll is cheap.
        await asyncio.sleep(min(timeout, self.poll_seconds))
