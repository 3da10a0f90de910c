"""The HTTP client's bulk actions on a filter (``/api/v1/runs/bulk/...``), written once
like the rest (see rota.client.calls): count first, then act with that count. The
filters are the run listing's (RunFilters), without its page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from rota.client.calls import Call, JsonObject, Request, RunFilters, run_query

BULK = "/api/v1/runs/bulk"


def preview_bulk(
    action: str, *, state: Sequence[str] | str | None = None, **filters: Unpack[RunFilters]
) -> Call[JsonObject]:
    """``{"action", "count"}``: how many runs ``action`` (cancel, requeue, replay,
    delete) would act on now."""
    path = f"{BULK}/{action}/preview"
    found = yield Request("GET", path, run_query(state, filters), retryable=True)
    return dict(found)


def run_bulk(
    action: str,
    expected_count: int,
    *,
    state: Sequence[str] | str | None = None,
    **filters: Unpack[RunFilters],
) -> Call[JsonObject]:
    """``{"action", "matched", "affected", "skipped", "batches"}``; a 409 ApiError
    (count-changed) when the filter no longer matches ``expected_count`` runs. Not
    retried: a second try after a dropped answer meets a changed count and does
    nothing, which is safe; preview again to go on."""
    body = {"expected_count": expected_count}
    done = yield Request("POST", f"{BULK}/{action}", run_query(state, filters), body=body)
    return dict(done)
