"""The Charts page (issue 29): throughput, failures and pickup delay over 1 h, 24 h or
7 d, for every queue or handler the viewer reaches or one of them; read through the same
use case as GET /api/v1/stats/series, drawn as inline SVG with each chart's numbers in a
table beside it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from rota.domain.access import Principal
from rota.domain.charts import DELAY_BOUNDS, ChartPoint, ChartRange, combined
from rota.services import charts as chart_service
from rota.services.charts import Charts
from rota.store.port import Store

CHART_WIDTH = 720.0
CHART_HEIGHT = 100.0
ALL = ""  # the choice that sums every series the viewer reaches
# The delay chart is logarithmic: its bars say in which bucket p50 and p99 fall.
_LOG_FLOOR = math.log10(DELAY_BOUNDS[0]) - 1
_LOG_SPAN = math.log10(DELAY_BOUNDS[-1]) - _LOG_FLOOR


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    label: str  # the bar's start, as the table says it
    point: ChartPoint
    finished_h: float
    failures_h: float
    p50_h: float
    p99_h: float


@dataclass(frozen=True)
class ChartsView:
    charts: Charts
    chosen: str  # ALL or "namespace/key"
    choices: list[tuple[str, str]]  # (value, label) for the selector
    bars: list[Bar]
    peak_finished: int
    peak_failures: int

    @property
    def ranges(self) -> list[str]:
        return [r.value for r in ChartRange]


def _delay_height(value: float | None) -> float:
    if value is None:
        return 0.0
    return round((math.log10(value) - _LOG_FLOOR) / _LOG_SPAN * CHART_HEIGHT, 1)


def _label(at: datetime, chart_range: ChartRange) -> str:
    return at.strftime("%m-%d %H:%M" if chart_range is ChartRange.WEEK else "%H:%M")


def _bars(points: list[ChartPoint], chart_range: ChartRange) -> tuple[list[Bar], int, int]:
    peak = max([1, *(p.finished for p in points)])
    peak_failures = max([1, *(p.failures for p in points)])
    step = CHART_WIDTH / max(1, len(points))
    bars = [
        Bar(
            x=round(i * step, 2),
            width=round(max(step * 0.8, 1.0), 2),
            label=_label(p.at, chart_range),
            point=p,
            finished_h=round(p.finished / peak * CHART_HEIGHT, 1),
            failures_h=round(p.failures / peak_failures * CHART_HEIGHT, 1),
            p50_h=_delay_height(p.delay_p50),
            p99_h=_delay_height(p.delay_p99),
        )
        for i, p in enumerate(points)
    ]
    return bars, peak, peak_failures


async def charts_view(
    store: Store, principal: Principal, range_text: str, by_text: str, chosen: str
) -> ChartsView:
    chart_range = chart_service.parse_range(range_text)
    by = chart_service.parse_by(by_text)
    charts = await chart_service.charts(store, principal, chart_range, by)
    choices = [(f"{s.namespace}/{s.key}", f"{s.key} ({s.namespace})") for s in charts.series]
    picked = [s for s in charts.series if f"{s.namespace}/{s.key}" == chosen]
    if not picked:
        chosen, picked = ALL, charts.series  # unknown or gone: every series, summed
    points = [] if charts.window is None else combined(picked, charts.window)
    bars, peak, peak_failures = _bars(points, chart_range)
    return ChartsView(charts, chosen, choices, bars, peak, peak_failures)
