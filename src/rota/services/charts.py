"""The charts (issue 29, "charts where people look"): throughput, failures and pickup
delay per queue or handler over 1 h, 24 h or 7 d, read from the leader's rollup only
(domain/charts.py), never from history, and narrowed to the namespaces the caller
reaches. What the API's /stats/series and the dashboard's Charts page share."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.domain.access import Principal
from rota.domain.charts import ChartBy, ChartRange, ChartSeries, ChartWindow, series
from rota.errors import InvalidArgument
from rota.store.port import Store

RANGES = ", ".join(repr(r.value) for r in ChartRange)
BYS = ", ".join(repr(b.value) for b in ChartBy)


@dataclass(frozen=True)
class Charts:
    chart_range: ChartRange
    by: ChartBy
    window: ChartWindow | None  # None: the leader has not counted yet
    series: list[ChartSeries]

    @property
    def counted_until(self) -> datetime | None:
        return None if self.window is None else self.window.until


def parse_range(text: str) -> ChartRange:
    try:
        return ChartRange(text)
    except ValueError:
        raise InvalidArgument("range", text, f"one of {RANGES}") from None


def parse_by(text: str) -> ChartBy:
    try:
        return ChartBy(text)
    except ValueError:
        raise InvalidArgument("by", text, f"one of {BYS}") from None


async def charts(
    store: Store, principal: Principal, chart_range: ChartRange, by: ChartBy
) -> Charts:
    window, counts = await store.chart_counts(chart_range, by)
    if window is None:
        return Charts(chart_range, by, None, [])
    seen = [c for c in counts if principal.can_see(c.namespace)]
    return Charts(chart_range, by, window, series(seen, window))
