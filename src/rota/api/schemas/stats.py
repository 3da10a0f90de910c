"""The charts' body: GET /api/v1/stats/series (services/charts.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from rota.domain.charts import DELAY_BOUNDS, ChartSeries, ChartWindow
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


def _points(one: ChartSeries, window: ChartWindow) -> list[SeriesPoint]:
    """The series' columns, a point a bar."""
    step = timedelta(seconds=window.bucket_seconds)
    return [
        SeriesPoint(
            at=window.since + step * i,
            finished=finished,
            failures=failures,
            succeeded=succeeded,
            started=started,
            delay_mean_seconds=mean,
            delay_p50_seconds=p50,
            delay_p99_seconds=p99,
        )
        for i, (finished, failures, succeeded, started, mean, p50, p99) in enumerate(
            zip(
                one.finished,
                one.failures,
                one.succeeded,
                one.started,
                one.delay_mean,
                one.delay_p50,
                one.delay_p99,
                strict=True,
            )
        )
    ]


class SeriesOut(BaseModel):
    namespace: str
    key: str = Field(description="The queue or the handler (as asked with by).")
    finished: int
    failures: int
    points: list[SeriesPoint]


class OtherSeries(BaseModel):
    keys: int = Field(description="How many queues (or handlers) are summed here.")
    finished: int
    failures: int
    points: list[SeriesPoint]


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
    top: int = Field(description="At most this many series apart, by runs finished.")
    series: list[SeriesOut] = Field(description="The top queues or handlers, most runs first.")
    other: OtherSeries | None = Field(
        description="Every queue or handler past the top summed per bar; null if none."
    )

    @classmethod
    def of(cls, charts: Charts, top: int) -> StatsSeries:
        window = charts.window
        shown = charts.keys[:top]
        others = charts.keys[top:]
        series = (
            []
            if window is None
            else [
                SeriesOut(
                    namespace=k.namespace,
                    key=k.key,
                    finished=k.finished,
                    failures=k.failures,
                    points=_points(one, window),
                )
                for k, one in zip(shown, charts.series, strict=True)
            ]
        )
        other = (
            None
            if window is None or charts.rest is None or not others
            else OtherSeries(
                keys=len(others),
                finished=sum(k.finished for k in others),
                failures=sum(k.failures for k in others),
                points=_points(charts.rest, window),
            )
        )
        return cls(
            range=charts.chart_range.value,
            by=charts.by.value,
            bucket_seconds=None if window is None else window.bucket_seconds,
            since=None if window is None else window.since,
            counted_until=charts.counted_until,
            delay_bounds_seconds=list(DELAY_BOUNDS),
            top=top,
            series=series,
            other=other,
        )
