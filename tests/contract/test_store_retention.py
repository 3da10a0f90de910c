"""PostgreSQL's retention drops whole days (ADR 0027, migration 30): a day of history
goes with the same day of attempts and log lines, each a partition of its own, so
retiring a day leaves no row behind for VACUUM; it gives way to a lock it would have
to wait for; and the upgrade keeps every attempt and line. SQLite prunes history in
batches instead (test_store_two_homes covers both)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import psycopg
import pytest

from rota.domain.runs import LogLine
from rota.store.postgres import PostgresStore
from rota.store.queries import latest_version

from .old_schema import migrate_postgres, postgres_database
from .support import T0, bounded, claim, new_run, retrying, succeeded

pytestmark = [pytest.mark.timeout(60), pytest.mark.postgres]

DAY_BEFORE = T0 - timedelta(days=1)
DAYS = ("rota_runs_history", "rota_attempts", "rota_run_logs")


def _day_names(day: object) -> list[str]:
    return [f"{parent}_{day:%Y%m%d}" for parent in DAYS]


async def _scalar(url: str, sql: str, params: tuple[object, ...] = ()) -> object:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(sql, params)).fetchone()
        assert row is not None
        return row[0]


async def _finish_runs(store: PostgresStore, url: str, count: int) -> list[int]:
    """``count`` runs finished on the day before T0, each after a retry (an attempt row;
    the success is kept in the run's own row) and with two log lines; one more run
    finished at T0, the same way. Only the day before is made (T0's rows go to the
    default partitions): other tests count on T0 having no day of its own."""
    await _scalar(url, "SELECT rota_make_history_days(%s::date, 1)", (DAY_BEFORE,))
    ids = []
    for now, runs in ((DAY_BEFORE, count), (T0, 1)):
        await store.enqueue([new_run() for _ in range(runs)], now)
        first = await claim(store, now=now, limit=runs)
        await store.complete([retrying(c, delay=0) for c in first], now)
        claimed = await claim(store, now=now, limit=runs)
        lines = [LogLine(c.run_id, 2, now, "info", m) for c in claimed for m in ("a", "b")]
        await store.append_logs(lines, {c.run_id: c.fence for c in claimed})
        await store.complete([succeeded(c) for c in claimed], now)
        ids += [c.run_id for c in claimed]
    return ids


async def test_a_retired_day_takes_its_attempts_and_logs_whole(pg_clean: str) -> None:
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        *old, new = await _finish_runs(store, pg_clean, 50)
        assert await store.retire_history(T0) == 50
        for name in _day_names(DAY_BEFORE):
            assert await _scalar(pg_clean, "SELECT to_regclass(%s) IS NULL", (name,)), name
        # Dropped, not deleted: what is left is T0's, and no dead row.
        assert await _scalar(pg_clean, "SELECT count(*) FROM rota_attempts") == 1
        assert await _scalar(pg_clean, "SELECT count(*) FROM rota_run_logs") == 2
        assert await store.attempts(old[0]) == []
        assert await store.logs(old[0]) == []
        assert [a.outcome.value for a in await store.attempts(new)] == ["failed", "succeeded"]
        assert [line.message for line in await store.logs(new)] == ["a", "b"]
    finally:
        await store.close()


async def test_retention_gives_way_to_a_lock_it_would_wait_for(pg_clean: str) -> None:
    """A reader holding the log table (a long listing, say) keeps retention from
    dropping its partitions: rather than hold every worker's completion and log write
    up behind its own wait, retention gives up within its lock timeout, changes
    nothing, and the next round retires the day."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        old = (await _finish_runs(store, pg_clean, 5))[0]
        async with await psycopg.AsyncConnection.connect(pg_clean) as reader:
            await reader.execute("SELECT count(*) FROM rota_run_logs")  # opens a transaction
            assert await bounded(store.retire_history(T0)) == 0
            await reader.rollback()
        assert len(await store.attempts(old)) == 2  # nothing half done
        assert await store.get_run(old) is not None
        assert await bounded(store.retire_history(T0)) == 5
        assert await store.get_run(old) is None
    finally:
        await store.close()


@pytest.fixture
def version_29_url(pg_url: str) -> Iterator[str]:
    """A database at schema version 29 (attempts and logs in one table each) holding an
    attempt and two log lines, one stamped three days ahead (a worker's clock)."""
    with postgres_database(pg_url, "v29") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate_postgres(conn, 30)
            conn.execute(
                "INSERT INTO rota_runs (id, handler, state, payload, run_at, sort_at,"
                " max_attempts, attempt, fence, finished_at)"
                " VALUES (7, 'job', 'succeeded', '{}', now(), now(), 3, 1, 1, now())"
            )
            conn.execute(
                "INSERT INTO rota_attempts (run_id, fence, attempt, finished_at, outcome)"
                " VALUES (7, 1, 1, now(), 'succeeded')"
            )
            conn.execute(
                "INSERT INTO rota_run_logs (run_id, attempt, at, level, message)"
                " VALUES (7, 1, now(), 'info', 'now'),"
                " (7, 1, now() + interval '3 days', 'info', 'ahead')"
            )
        yield url


async def test_the_upgrade_keeps_every_attempt_and_line(version_29_url: str) -> None:
    store = PostgresStore(version_29_url)
    await store.open()
    try:
        assert await store.migrate() == list(range(30, latest_version("postgres") + 1))
        [attempt] = await store.attempts(7)
        assert (attempt.fence, attempt.outcome.value) == (1, "succeeded")
        lines = await store.logs(7)
        assert [line.message for line in lines] == ["now", "ahead"]
        # New lines are numbered after the kept ones: a tail that has seen them asks
        # for what comes after.
        assert await store.append_logs([LogLine(7, 1, T0, "info", "later")], {7: 1}) == 1
        later = await store.logs(7, after=lines[-1].seq)
        assert [line.message for line in later] == ["later"]
    finally:
        await store.close()
    # The table as it was is the first partition; the line ahead went to its own day.
    holders = await _scalar(
        version_29_url,
        "SELECT string_agg(tableoid::regclass::text, ',' ORDER BY id) FROM rota_run_logs",
    )
    first, ahead, _ = str(holders).split(",")
    assert first.startswith("rota_run_logs_upto_")
    assert ahead.startswith("rota_run_logs_2") or ahead == "rota_run_logs_default"


# Indexes of history's first partition (made of the old runs table by migration 20)
# whose only column is id.
ID_INDEXES_OF_THE_FIRST_PARTITION = (
    "SELECT count(*) FROM pg_index i"
    " JOIN pg_class t ON t.oid = i.indrelid"
    " WHERE t.relname LIKE 'rota_runs_history_upto_%%'"
    " AND i.indnatts = 1 AND i.indkey[0] = ("
    "   SELECT attnum FROM pg_attribute WHERE attrelid = t.oid AND attname = 'id')"
)


async def test_the_first_partition_keeps_one_index_on_id(pg_url: str) -> None:
    """Migration 32: the old table's primary key went, history's own index on id stays;
    every run a database finishes before its first day partition wrote into both."""
    with postgres_database(pg_url, "v31") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate_postgres(conn, 32)
        assert await _scalar(url, ID_INDEXES_OF_THE_FIRST_PARTITION) == 2
        store = PostgresStore(url)
        await store.open()
        try:
            assert await store.migrate() == list(range(32, latest_version("postgres") + 1))
            assert await _scalar(url, ID_INDEXES_OF_THE_FIRST_PARTITION) == 1
            for run_id in await _finish_runs(store, url, 1):
                run = await store.get_run(run_id)
                assert run is not None, "a finished run is still read by its id"
        finally:
            await store.close()
