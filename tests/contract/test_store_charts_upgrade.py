"""Migration 0028 folds the charts' rollup rows per final state into one row per bucket
and key, carrying over what was counted: a database counted at schema 27 reads the same
numbers after the upgrade, and counted_until does not move (nothing is recounted)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from rota.domain.charts import CHART_TOP_MAX, ChartAsk, ChartBy, ChartRange
from rota.store.port import Store
from rota.store.postgres import PostgresStore
from rota.store.sqlite import SqliteStore

from .old_schema import migrate_postgres, migrate_sqlite, postgres_database
from .support import T0

pytestmark = [pytest.mark.timeout(60)]

FOLDED = 28
COUNTED_UNTIL = T0
# (state, count, waited_sum, the six delay buckets): one key's rows of one bucket at 25.
BY_STATE = [
    ("succeeded", 3, 0.15, (3, 0, 0, 0, 0, 0)),
    ("failed", 1, 5.0, (0, 0, 1, 0, 0, 0)),
    ("dead_lettered", 2, 700.0, (0, 0, 0, 0, 0, 1)),  # one never started
    ("skipped", 1, 0.0, (0, 0, 0, 0, 0, 0)),  # finished, neither succeeded nor failed
]
LEVELS = (  # table, bucket column, the bucket's instant
    ("rota_chart_minutes", "minute", T0 - timedelta(minutes=30)),
    ("rota_chart_quarters", "quarter", T0 - timedelta(minutes=30)),
    ("rota_chart_hours", "hour", T0 - timedelta(hours=1)),
)
INSERT = (
    "INSERT INTO {table} ({column}, namespace, queue, handler, state, count, waited_sum,"
    " waited_100ms, waited_1s, waited_10s, waited_1m, waited_10m, waited_more)"
    " VALUES ({p}, 'default', 'q1', 'h1', {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"
)


def _old_rows(placeholder: str, instant: Any) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for table, column, bucket in LEVELS:
        sql = INSERT.format(table=table, column=column, p=placeholder)
        for state, count, waited_sum, delays in BY_STATE:
            yield sql, (instant(bucket), state, count, waited_sum, *delays)
    yield (
        f"INSERT INTO rota_chart_rollup (id, counted_until) VALUES (1, {placeholder})",
        (instant(COUNTED_UNTIL),),
    )


def _sqlite_at_27(url: str) -> None:
    with contextlib.closing(migrate_sqlite(url, FOLDED)) as conn, conn:
        for sql, params in _old_rows("?", datetime.timestamp):
            conn.execute(sql, params)


def _postgres_at_27(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        migrate_postgres(conn, FOLDED)
        for sql, params in _old_rows("%s", lambda instant: instant):
            conn.execute(sql.encode(), params)


@pytest.fixture
def counted_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database at schema 27 whose rollup holds one key's rows per state."""
    if request.node.callspec.params["kind"] == "sqlite":
        url = f"sqlite:///{tmp_path}/counted.db"
        _sqlite_at_27(url)
        yield url
        return
    with postgres_database(str(request.getfixturevalue("pg_url")), "charts") as url:
        _postgres_at_27(url)
        yield url


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_an_upgrade_keeps_what_the_rollup_counted(kind: str, counted_url: str) -> None:
    store: Store = SqliteStore(counted_url) if kind == "sqlite" else PostgresStore(counted_url)
    await store.open()
    try:
        assert FOLDED in await store.migrate()
        # Where the old counts began is not known (migration 33): the finished counts
        # read runs (none here), not those minutes, until the leader's next count.
        assert await store.finished_counts(T0 - timedelta(hours=1), 60) == []
        for chart_range in ChartRange:  # each level: minutes, quarter-hours, hours
            read = await store.chart_read(ChartAsk(chart_range, ChartBy.HANDLER, top=CHART_TOP_MAX))
            assert read is not None
            assert read.window.until == COUNTED_UNTIL  # not reset: nothing recounted
            assert [(k.key, k.finished, k.failures) for k in read.keys] == [("h1", 7, 3)]
            [h1] = read.series
            assert (sum(h1.finished), sum(h1.succeeded), sum(h1.failures)) == (7, 3, 3)
            assert sum(h1.delay_sum) == pytest.approx(705.15)
            delays = tuple(sum(bucket) for bucket in zip(*h1.delay_buckets, strict=True))
            assert delays == (3, 0, 1, 0, 0, 1), chart_range
    finally:
        await store.close()
