"""The one SQL store: the charts' rollup (domain/charts.py says which minutes a batch
counts and which bars a chart reads; the SQL is in sql/<dialect>/charts.sql). One read,
chart_read, serves every range: the range names the rollup level it reads."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from rota.domain.charts import (
    ChartAsk,
    ChartBar,
    ChartBatch,
    ChartKey,
    ChartRead,
    chart_batch,
    chart_read,
    chart_window,
)
from rota.store.core.base import CoreBase
from rota.store.dialect import Session


def _bar(row: dict[str, Any]) -> ChartBar:
    return (
        row["bar"],
        row["series"],
        int(row["finished"]),
        int(row["succeeded"]),
        int(row["failures"]),
        float(row["waited_sum"]),
        (
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
        batch = chart_batch(
            now,
            counted[0]["counted_until"] if counted else None,
            counted[0]["counted_from"] if counted else None,
        )
        params = {
            "start": batch.start,
            "until": batch.until,
            "hour_start": batch.hour_start,
            "hour_until": batch.hour_until,
            "minutes_keep_since": batch.minutes_keep_since,
            "hours_keep_since": batch.hours_keep_since,
            "counted_from": batch.counted_from,
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

    async def chart_read(self, ask: ChartAsk) -> ChartRead | None:
        counted = await self._d.rows("chart_counted_until", {})
        if not counted:
            return None
        window = chart_window(ask.chart_range, counted[0]["counted_until"])
        only_namespace, only_key = ask.only or (None, None)
        rows = await self._d.rows(
            "chart_read",
            {
                # The level is a fixed word of the range, never the caller's text.
                "rollup": ask.chart_range.rollup,
                "since": window.since,
                "until": window.until,
                "bucket": window.bucket_seconds,
                "by": ask.by.value,
                "namespaces": None if ask.namespaces is None else sorted(ask.namespaces),
                "top": ask.top,
                "only_namespace": only_namespace,
                "only_key": only_key,
            },
        )
        # The keys come first in rank order (bar NULL), then the bars.
        keys = [
            ChartKey(r["namespace"], r["key"], int(r["finished"]), int(r["failures"]))
            for r in sorted((r for r in rows if r["bar"] is None), key=lambda r: r["series"])
        ]
        bars = [_bar(r) for r in rows if r["bar"] is not None]
        return chart_read(window, keys, bars, ask.top)
