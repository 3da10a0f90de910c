"""The charts' body: GET /api/v1/stats/series (services/charts.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from rota.domain.charts import DELAY_BOUNDS, ChartPoint, ChartSeries
from rota.services.charts import Charts


class SeriesPoint(BaseModel):
    at: datetime = Field(description="Where the bar starts (bars are bucket_seconds long).")
    finished: int
    failures: int = Field(description="Finished failed, timed out, dead-lettered or cancelled.")
    succeeded: int
    started: int = Field(description="Finished runs that had started: those with a delay.")
    delay_mean_seconds: float | None = Field(description="Mean pickup delay (started - due).")
    delay_p50_seconds: float | None = Field(
        description="Estimated: the upper bound of the delay bucket holding the median."
    )
    delay_p99_seconds: float | None = Field(
        description="Estimated likewise; the top bound means that long or longer."
    )

    @classmethod
    def of(cls, point: ChartPoint) -> SeriesPoint:
        return cls(
            at=point.at,
            finished=point.finished,
            failures=point.failures,
            succeeded=point.succeeded,
            started=point.started,
            delay_mean_seconds=point.delay_mean,
            delay_p50_seconds=point.delay_p50,
            delay_p99_seconds=point.delay_p99,
        )


class SeriesOut(BaseModel):
    namespace: str
    key: str = Field(description="The queue or the handler (as asked with by).")
    finished: int
    failures: int
    points: list[SeriesPoint]

    @classmethod
    def of(cls, one: ChartSeries) -> SeriesOut:
        return cls(
            namespace=one.namespace,
            key=one.key,
            finished=one.finished,
            failures=one.failures,
            points=[SeriesPoint.of(p) for p in one.points],
        )


class StatsSeries(BaseModel):
    range: Literal["1h", "24h", "7d"]
    by: Literal["queue", "handler"]
    bucket_seconds: int | None = Field(description="One bar; null before the first count.")
    since: datetime | None = Field(description="Where the first bar starts.")
    counted_until: datetime | None = Field(
        description="Runs that finished before this are counted (a minute or two ago); "
        "null until the leader has counted once."
    )
    delay_bounds_seconds: list[float] = Field(
        description="The pickup-delay buckets' upper bounds (the last is open above)."
    )
    series: list[SeriesOut]

    @classmethod
    def of(cls, charts: Charts) -> StatsSeries:
        window = charts.window
        return cls(
            range=charts.chart_range.value,
            by=charts.by.value,
            bucket_seconds=None if window is None else window.bucket_seconds,
            since=None if window is None else window.since,
            counted_until=charts.counted_until,
            delay_bounds_seconds=list(DELAY_BOUNDS),
            series=[SeriesOut.of(s) for s in charts.series],
        )
