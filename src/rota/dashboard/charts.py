"""The Charts page (issue 29): throughput, failures and pickup delay over 1 h, 24 h or
7 d, for every queue or handler the viewer reaches or one of them; read through the same
use case as GET /api/v1/stats/series, drawn as inline SVG with each chart's numbers in a
table beside it. The page draws one series, every key summed or the one chosen, so it
asks the database for exactly that (top=0): one value a bar, whatever the keys."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.domain.access import Principal
from rota.domain.charts import DELAY_BOUNDS, ChartRange, ChartSeries, ChartWindow
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
    finished: int
    succeeded: int
    failures: int
    started: int
    delay_mean: float | None
    delay_p50: float | None
    delay_p99: float | None
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


def _bars(
    one: ChartSeries | None, window: ChartWindow | None, chart_range: ChartRange
) -> tuple[list[Bar], int, int]:
    if one is None or window is None:
        return [], 1, 1
    peak = max([1, *one.finished])
    peak_failures = max([1, *one.failures])
    step = CHART_WIDTH / window.bars
    width = round(max(step * 0.8, 1.0), 2)
    bucket = timedelta(seconds=window.bucket_seconds)
    columns = zip(
        one.finished,
        one.succeeded,
        one.failures,
        one.started,
        one.delay_mean,
        one.delay_p50,
        one.delay_p99,
        strict=True,
    )
    bars = [
        Bar(
            x=round(i * step, 2),
            width=width,
            label=_label(window.since + bucket * i, chart_range),
            finished=finished,
            succeeded=succeeded,
            failures=failures,
            started=started,
            delay_mean=mean,
            delay_p50=p50,
            delay_p99=p99,
            finished_h=round(finished / peak * CHART_HEIGHT, 1),
            failures_h=round(failures / peak_failures * CHART_HEIGHT, 1),
            p50_h=_delay_height(p50),
            p99_h=_delay_height(p99),
        )
        for i, (finished, succeeded, failures, started, mean, p50, p99) in enumerate(columns)
    ]
    return bars, peak, peak_failures


def _only(chosen: str) -> tuple[str, str] | None:
    namespace, slash, key = chosen.partition("/")
    return (namespace, key) if slash else None


async def charts_view(
    store: Store, principal: Principal, range_text: str, by_text: str, chosen: str
) -> ChartsView:
    chart_range = chart_service.parse_range(range_text)
    by = chart_service.parse_by(by_text)
    only = _only(chosen)
    charts = await chart_service.charts(store, principal, chart_range, by, top=0, only=only)
    if only is not None and not any((k.namespace, k.key) == only for k in charts.keys):
        # Unknown, gone or out of reach: every key, summed.
        charts = await chart_service.charts(store, principal, chart_range, by, top=0)
        only = None
    choices = [(f"{k.namespace}/{k.key}", f"{k.key} ({k.namespace})") for k in charts.keys]
    choices.sort()  # by name, as a selector reads; keys come most runs first
    bars, peak, peak_failures = _bars(charts.rest, charts.window, chart_range)
    return ChartsView(charts, chosen if only else ALL, choices, bars, peak, peak_failures)
