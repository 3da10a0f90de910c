"""Statistics over time: the charts' series, read from the leader's rollup (needs
jobs:read; only the namespaces the caller reaches)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from rota.api.auth import Reader
from rota.api.context import StoreDep
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.stats import StatsSeries
from rota.domain.charts import CHART_TOP, CHART_TOP_MAX, ChartBy, ChartRange
from rota.services import charts as chart_service

router = APIRouter(prefix="/api/v1", tags=["stats"])

# Checked by the use case, so that a bad value is named in the problem with what is
# allowed (the schema still lists the values).
RangeQuery = Annotated[
    str,
    Query(
        description="How far back: 1h (bars of a minute), 24h (15 minutes), 7d (an hour).",
        json_schema_extra={"enum": [r.value for r in ChartRange]},
    ),
]
ByQuery = Annotated[
    str,
    Query(
        description="One series per namespace and queue, or per namespace and handler.",
        json_schema_extra={"enum": [b.value for b in ChartBy]},
    ),
]
TopQuery = Annotated[
    int,
    Query(
        description="How many queues or handlers apart, by runs finished; the rest come "
        "summed as other (0: all of them summed).",
        ge=0,
        le=CHART_TOP_MAX,
    ),
]


@router.get("/stats/series", responses=responses(*AUTHENTICATED))
async def series(
    principal: Reader,
    store: StoreDep,
    range: RangeQuery = "1h",
    by: ByQuery = "queue",
    top: TopQuery = CHART_TOP,
) -> StatsSeries:
    """Throughput, failures and pickup delay per bar, one series per queue or handler
    of the top ones by runs finished and one of the others summed (counted by the
    leader a minute or two behind; never read from history)."""
    charts = await chart_service.charts(
        store, principal, chart_service.parse_range(range), chart_service.parse_by(by), top
    )
    return StatsSeries.of(charts, top)
