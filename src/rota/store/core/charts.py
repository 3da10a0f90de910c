"""The one SQL store: the charts' rollup (domain/charts.py says which minutes a batch
counts and which bars a chart reads; the SQL is in sql/<dialect>/charts.sql)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from rota.domain.charts import (
    ChartBatch,
    ChartBy,
    ChartCount,
    ChartRange,
    ChartWindow,
    chart_batch,
    chart_window,
)
from rota.store.core.base import CoreBase
from rota.store.dialect import Session


def chart_count_from_row(row: dict[str, Any]) -> ChartCount:
    return ChartCount(
        bucket_start=row["bucket_start"],
        namespace=row["namespace"],
        key=row["key"],
        count=int(row["count"]),
        succeeded=int(row["succeeded"]),
        failures=int(row["failures"]),
        delay_sum=float(row["waited_sum"]),
        delay_buckets=(
            int(row["waited_100ms"]),
            int(row["waited_1s"]),
            int(row["waited_10s"]),
            int(row["waited_1m"]),
            int(row["waited_10m"]),
            int(row["waited_more"]),
        ),
    )


class CoreCharts(CoreBase):
    async def count_chart_batch(self, now: datetime) -> ChartBatch:
        counted = await self._d.rows("chart_counted_until", {})
        batch = chart_batch(now, counted[0]["counted_until"] if counted else None)
        params = {
            "start": batch.start,
            "until": batch.until,
            "hour_start": batch.hour_start,
            "hour_until": batch.hour_until,
            "minutes_keep_since": batch.minutes_keep_since,
            "hours_keep_since": batch.hours_keep_since,
        }

        async def count(session: Session) -> bool:
            # One transaction: a batch that dies before its commit left nothing behind.
            [lock] = await session.rows("lock_chart_rollup", {})
            if not lock["locked"]:
                return False  # another leader is counting: this turn is its
            await session.rows("forget_chart_minutes", params)
            await session.rows("count_chart_minutes", params)
            await session.rows("forget_chart_hours", params)
            await session.rows("count_chart_hours", params)
            await session.rows("forget_chart_quarters", params)
            await session.rows("count_chart_quarters", params)
            await session.rows("set_chart_counted_until", params)
            return True

        if not await self._d.in_transaction(now, count):
            return dataclasses.replace(batch, caught_up=True)  # nothing more this turn
        return batch

    async def chart_counts(
        self, chart_range: ChartRange, by: ChartBy
    ) -> tuple[ChartWindow | None, list[ChartCount]]:
        counted = await self._d.rows("chart_counted_until", {})
        if not counted:
            return None, []
        window = chart_window(chart_range, counted[0]["counted_until"])
        rows = await self._d.rows(
            f"chart_{chart_range.rollup}",
            {
                "since": window.since,
                "until": window.until,
                "bucket": window.bucket_seconds,
                "by": by.value,
            },
        )
        return window, [chart_count_from_row(row) for row in rows]
