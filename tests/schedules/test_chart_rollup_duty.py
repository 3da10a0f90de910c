"""The leader's finished-counts duty also rolls finished runs up for the charts (in one
turn from nothing, a bounded batch a transaction), and drops rollup rows older than
eight days (minutes and quarter-hours older than 25 hours)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import psycopg

from rota.clock import FakeClock
from rota.config import Settings
from rota.domain.charts import ChartAsk, ChartBy, ChartRange
from rota.engine.housekeeping import Housekeeper
from rota.store.port import Store

from ..contract.support import claim_one, new_run, succeeded

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def _rows(db_url: str, table: str) -> int:
    query = f"SELECT count(*) FROM {table}"
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            return int(conn.execute(query).fetchone()[0])
    with psycopg.connect(db_url) as pg:
        row = pg.execute(query).fetchone()
        assert row is not None
        return int(row[0])


async def test_the_duty_rolls_up_and_prunes_what_is_older_than_kept(
    store: Store, db_url: str
) -> None:
    clock = FakeClock(NOW)
    await store.enqueue([new_run(handler="report")], NOW - timedelta(minutes=10))
    claimed = await claim_one(store, NOW - timedelta(minutes=10))
    await store.complete([succeeded(claimed)], NOW - timedelta(minutes=9))
    keeper = Housekeeper(store, Settings(database_url=db_url), clock)
    await keeper.count_finished()
    read = await store.chart_read(ChartAsk(ChartRange.HOUR, ChartBy.HANDLER))
    assert read is not None
    assert read.window.until == NOW - timedelta(minutes=1)
    assert [(k.key, k.finished) for k in read.keys] == [("report", 1)]
    assert [_rows(db_url, f"rota_chart_{t}") for t in ("minutes", "quarters", "hours")] == [1, 1, 1]
    clock.advance(days=2)  # the minute is past 25 hours; its hour is kept
    await keeper.count_finished()
    assert [_rows(db_url, f"rota_chart_{t}") for t in ("minutes", "quarters", "hours")] == [0, 0, 1]
    week = await store.chart_read(ChartAsk(ChartRange.WEEK, ChartBy.HANDLER))
    assert week is not None
    assert [(k.key, k.finished) for k in week.keys] == [("report", 1)]
    clock.advance(days=6, hours=2)  # past eight days: the hour goes too
    await keeper.count_finished()
    assert _rows(db_url, "rota_chart_hours") == 0
