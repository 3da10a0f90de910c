"""A run lives in one of two homes (ADR 0027; PostgreSQL migration 20, SQLite 19): the
queue (rota_runs_live) holds what a claim, a renewal or the reaper still needs, history
(rota_runs_history; on PostgreSQL a partition per finish day) every finished run. The
statement that finishes a run moves it; reads name rota_runs and see both."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from rota.domain.runs import LogLine, RunFilter
from rota.domain.states import TERMINAL_STATES, RunState
from rota.errors import InvalidTransition
from rota.store.port import ClaimRequest, Store
from rota.store.postgres import PostgresStore
from rota.store.queries import latest_version, load_queries
from rota.store.sqlite import SqliteStore
from rota.store.sqlite.dialect import path_from_url

from .old_schema import migrate_postgres, migrate_sqlite, postgres_database
from .support import T0, bounded, claim, new_run, state_of, succeeded

pytestmark = [pytest.mark.timeout(60)]

RUNS = 4000
HELD = 40
FINAL = sorted(state.value for state in TERMINAL_STATES)


async def _mixed_table(url: str) -> None:
    """Many finished runs, a backlog, a few dead letters and a few held runs, analysed."""
    store = PostgresStore(url)
    await store.open()
    try:
        await store.enqueue([new_run() for _ in range(RUNS)], T0)
        claimed = await store.claim(
            ClaimRequest(worker_id="w", queues=("default",), limit=HELD, lease_seconds=30.0), T0
        )
        assert len(claimed) == HELD
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE rota_runs SET state = 'succeeded', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id > %(held)s AND id <= 2000",
            {"t": T0, "held": HELD},
        )
        await conn.execute(
            "UPDATE rota_runs SET state = 'dead_lettered', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id > 2000 AND id <= 2020",
            {"t": T0},
        )
        await conn.execute("VACUUM ANALYZE rota_runs")


async def _homes(url: str) -> dict[str, list[str]]:
    """Each home's states, one entry per run."""
    homes: dict[str, list[str]] = {}
    for home in ("rota_runs_live", "rota_runs_history"):
        query = f"SELECT state FROM {home}"
        if url.startswith("sqlite"):
            with sqlite3.connect(path_from_url(url)) as conn:
                homes[home] = [row[0] for row in conn.execute(query)]
        else:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                homes[home] = [row[0] for row in await (await conn.execute(query)).fetchall()]
    return homes


async def _plan(url: str, query: str, params: dict[str, object]) -> str:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("EXPLAIN " + load_queries("postgres")[query], params)
        return "\n".join(row[0] for row in await cur.fetchall())


async def test_a_finished_run_leaves_the_queue_in_the_statement_that_finishes_it(
    store: Store, db_url: str
) -> None:
    await store.enqueue([new_run() for _ in range(6)], T0)
    claimed = await claim(store, limit=4)
    done = [succeeded(c) for c in claimed[:2]]
    assert await store.complete(done, T0) == {c.run_id for c in claimed[:2]}
    await store.request_cancel(6, T0)
    homes = await _homes(db_url)
    assert sorted(homes["rota_runs_history"]) == ["cancelled", "succeeded", "succeeded"]
    assert sorted(homes["rota_runs_live"]) == ["claimed", "claimed", "pending"]
    # A run keeps its id in history, and reads by id find it there.
    run = await store.get_run(claimed[0].run_id)
    assert run is not None
    assert run.state is RunState.SUCCEEDED
    # A stale worker's second outcome for a run that moved matches nothing.
    assert await store.complete(done, T0) == set()
    # Its key stays taken while the run is kept: the same key returns the same run.
    keyed = new_run(idempotency_key="k")
    [first] = await store.enqueue([keyed], T0)
    await store.complete([succeeded(c) for c in await claim(store, limit=10)], T0)
    assert await state_of(store, first.run_id) is RunState.SUCCEEDED
    [again] = await store.enqueue([keyed], T0)
    assert (again.run_id, again.created) == (first.run_id, False)
    # An id is never handed out twice, though its run left the queue.
    [fresh] = await store.enqueue([new_run()], T0)
    assert fresh.run_id > first.run_id


@pytest.mark.postgres
async def test_no_finished_run_is_in_the_queue(pg_clean: str) -> None:
    await _mixed_table(pg_clean)
    homes = await _homes(pg_clean)
    assert sorted(set(homes["rota_runs_history"])) == ["dead_lettered", "succeeded"]
    assert len(homes["rota_runs_history"]) == 2020 - HELD
    assert not set(homes["rota_runs_live"]) & set(FINAL)
    assert len(homes["rota_runs_live"]) == RUNS - (2020 - HELD)


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("state", "home", "other"),
    [
        (RunState.RUNNING, "rota_runs_live", "rota_runs_history"),
        (RunState.CLAIMED, "rota_runs_live", "rota_runs_history"),
        (RunState.DEAD_LETTERED, "rota_runs_history", "rota_runs_live"),
        (RunState.SUCCEEDED, "rota_runs_history", "rota_runs_live"),
    ],
)
async def test_a_listing_by_state_reads_only_its_home(
    pg_clean: str, state: RunState, home: str, other: str
) -> None:
    await _mixed_table(pg_clean)
    params = {"state": state.value, "handler": None, "queue": None, "before_id": None}
    plan = await _plan(pg_clean, "list_runs", {**params, "limit": 50})
    assert home in plan, plan
    assert other not in plan, plan
    # The runs are in the queue and history's default partition (T0 has no day made);
    # the empty day partitions may be scanned, at no cost.
    assert "Seq Scan on rota_runs_live" not in plan, plan
    assert "Seq Scan on rota_runs_history_default" not in plan, plan
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        listed = await store.list_runs(RunFilter(state=state, limit=50))
    finally:
        await store.close()
    expected = {RunState.CLAIMED: HELD, RunState.DEAD_LETTERED: 20, RunState.SUCCEEDED: 50}
    assert len(listed) == expected.get(state, 0)
    assert all(run.state is state for run in listed)


# -- upgrading a database that kept every run in one table --------------------------
TWO_HOMES = {"sqlite": 19, "postgres": 20}  # the migration that made them
# Runs as the one table held them: (state, finished, idempotency key).
OLD_RUNS = [
    ("succeeded", True, "paid-1"),
    ("dead_lettered", True, None),
    ("pending", False, "paid-2"),
    ("running", False, None),
    ("waiting", False, None),
    ("cancelled", True, None),
]


@pytest.fixture
def old_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database at the schema before the two homes, with runs in every kind of state;
    the highest id is a finished run's."""
    kind = "postgres" if request.node.callspec.params["old_kind"] == "postgres" else "sqlite"
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path}/old.db"
        with contextlib.closing(migrate_sqlite(url, TWO_HOMES[kind])) as conn, conn:
            for state, finished, key in OLD_RUNS:
                conn.execute(
                    "INSERT INTO rota_runs (handler, state, payload, run_at, sort_at,"
                    " max_attempts, created_at, finished_at, idempotency_key)"
                    " VALUES ('job', ?, '{}', 0, 0, 3, 0, ?, ?)",
                    (state, 1.0 if finished else None, key),
                )
        yield url
        return
    with postgres_database(str(request.getfixturevalue("pg_url")), "old") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate_postgres(conn, TWO_HOMES[kind])
            for state, finished, key in OLD_RUNS:
                conn.execute(
                    "INSERT INTO rota_runs (handler, state, payload, run_at, sort_at,"
                    " max_attempts, finished_at, idempotency_key)"
                    " VALUES ('job', %s, '{}', now(), now(), 3,"
                    " CASE WHEN %s THEN now() - interval '1 day' END, %s)",
                    (state, finished, key),
                )
        yield url


@pytest.mark.parametrize(
    "old_kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_an_upgrade_puts_every_kept_run_in_its_home(old_kind: str, old_url: str) -> None:
    store: Store = SqliteStore(old_url) if old_kind == "sqlite" else PostgresStore(old_url)
    await store.open()
    try:
        assert await store.migrate() == list(
            range(TWO_HOMES[old_kind], latest_version(old_kind) + 1)
        )
        homes = await _homes(old_url)
        assert sorted(homes["rota_runs_history"]) == ["cancelled", "dead_lettered", "succeeded"]
        assert sorted(homes["rota_runs_live"]) == ["pending", "running", "waiting"]
        assert await state_of(store, 1) is RunState.SUCCEEDED  # ids kept
        assert await state_of(store, 5) is RunState.WAITING
        # New runs take ids above every kept one, though the highest left the queue.
        [fresh] = await store.enqueue([new_run()], T0)
        assert fresh.run_id == len(OLD_RUNS) + 1
        # Keys still name their runs, in either home.
        for key, run_id in (("paid-1", 1), ("paid-2", 3)):
            [again] = await store.enqueue([new_run(idempotency_key=key)], T0)
            assert (again.run_id, again.created) == (run_id, False)
    finally:
        await store.close()


async def test_retention_drops_a_whole_day_of_history_with_its_attempts_logs_and_keys(
    store: Store, db_url: str
) -> None:
    """PostgreSQL retires a day partition whole once all of it is older than the
    cutoff, and the same day of attempts and log lines with it (migration 30);
    SQLite keeps history in one table and prunes it in batches instead."""
    day_before = T0 - timedelta(days=1)
    if not db_url.startswith("sqlite"):
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            await conn.execute("SELECT rota_make_history_days(%s::date, 1)", (day_before,))
    await store.enqueue([new_run(), new_run(idempotency_key="once")], day_before)
    claimed = await claim(store, now=day_before, limit=2)
    lines = [LogLine(c.run_id, 1, day_before, "info", "working") for c in claimed]
    assert await store.append_logs(lines, {c.run_id: c.fence for c in claimed}) == 2
    await store.complete([succeeded(c) for c in claimed], day_before)
    [kept] = await store.enqueue([new_run()], T0)
    assert await store.append_logs(
        [LogLine(kept.run_id, 0, T0, "info", "queued")], {kept.run_id: 0}
    )

    retired = await store.retire_history(T0 - timedelta(hours=13))  # the day is not over
    assert retired == 0
    retired = await store.retire_history(T0)
    if db_url.startswith("sqlite"):
        assert retired == 0
        assert await store.prune_finished(T0, 100) == 2
    else:
        assert retired == 2
    for c in claimed:
        assert await store.get_run(c.run_id) is None
        assert await store.attempts(c.run_id) == []
        assert await store.logs(c.run_id) == []
    assert await state_of(store, kept.run_id) is RunState.PENDING
    assert [line.message for line in await store.logs(kept.run_id)] == ["queued"]
    # The key went with its run: it names a new one now.
    [again] = await store.enqueue([new_run(idempotency_key="once")], T0)
    assert again.created


async def _waiting_on_a_lock(conn: psycopg.AsyncConnection[object], query_start: str) -> None:
    """Until some session's statement starting with ``query_start`` waits on a row lock."""
    async with asyncio.timeout(20):
        while True:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE %(start)s",
                {"start": query_start + "%"},
            )
            [(waiting,)] = await cur.fetchall()
            if waiting:
                return
            await asyncio.sleep(0.01)


@pytest.mark.postgres
async def test_a_write_that_meets_a_run_moved_meanwhile_runs_again(pg_clean: str) -> None:
    """A cancel that waits on a run while a completion moves it to history: PostgreSQL
    refuses to follow a row into another partition (a serialization failure) where it
    would follow an update within one. The store runs the cancel again, which sees the
    run finished: the caller gets the answer for a finished run, not an outage."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        [enqueued] = await store.enqueue([new_run()], T0)
        [held] = await claim(store, T0, limit=1)
        async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as mover:
            async with mover.transaction():
                await mover.execute(
                    "UPDATE rota_runs SET state = 'succeeded', finished_at = %(t)s"
                    " WHERE id = %(id)s",
                    {"t": T0, "id": held.run_id},
                )
                cancel = asyncio.ensure_future(store.request_cancel(enqueued.run_id, T0))
                async with await psycopg.AsyncConnection.connect(pg_clean) as watcher:
                    await _waiting_on_a_lock(watcher, "UPDATE rota_runs SET cancel_requested")
            with pytest.raises(InvalidTransition):
                await bounded(cancel)
        assert await state_of(store, enqueued.run_id) is RunState.SUCCEEDED
    finally:
        await store.close()
