"""The charts (issue 29, "charts where people look"): throughput, failures and pickup
delay per queue or handler over 1 h, 24 h or 7 d, read from the leader's rollup only
(domain/charts.py), never from history, and narrowed in the database to the namespaces
the caller reaches. What the API's /stats/series and the dashboard's Charts page share.

The database sums the bars to what is drawn (the top keys apart, the rest as one), so a
read costs at most (top + 1) x bars values, however many queues or handlers there are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.domain.access import Principal
from rota.domain.charts import (
    CHART_TOP,
    CHART_TOP_MAX,
    ChartAsk,
    ChartBy,
    ChartKey,
    ChartRange,
    ChartSeries,
    ChartWindow,
)
from rota.errors import InvalidArgument
from rota.store.port import Store

RANGES = ", ".join(repr(r.value) for r in ChartRange)
BYS = ", ".join(repr(b.value) for b in ChartBy)


@dataclass(frozen=True)
class Charts:
    chart_range: ChartRange
    by: ChartBy
    window: ChartWindow | None  # None: the leader has not counted yet
    keys: list[ChartKey]  # every key the caller reaches, most runs finished first
    series: list[ChartSeries]  # the top keys', in the order of keys
    rest: ChartSeries | None  # every other key summed (or the one key asked for)

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


def check_top(top: int) -> int:
    if not 0 <= top <= CHART_TOP_MAX:
        raise InvalidArgument("top", top, f"a whole number from 0 to {CHART_TOP_MAX}")
    return top


async def charts(
    store: Store,
    principal: Principal,
    chart_range: ChartRange,
    by: ChartBy,
    top: int = CHART_TOP,
    only: tuple[str, str] | None = None,
) -> Charts:
    """The ``top`` keys' series and the rest summed (``only``: that key alone as the
    rest)."""
    ask = ChartAsk(chart_range, by, principal.namespaces, check_top(top), only)
    read = await store.chart_read(ask)
    if read is None:
        return Charts(chart_range, by, None, [], [], None)
    return Charts(chart_range, by, read.window, read.keys, read.series, read.rest)
