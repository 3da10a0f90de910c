"""The HTTP client's bulk actions on a filter (``/api/v1/runs/bulk/...``), written once
like the rest (see rota.client.calls): count first, then act with that count."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack

from rota.client.calls import Call, JsonObject, Request, _instant, _query

BULK = "/api/v1/runs/bulk"


class BulkFilters(TypedDict, total=False):
    """The run listing's filters, without its page (``limit``, ``cursor``)."""

    namespace: str | None
    handler: str | None
    queue: str | None
    tag: str | None
    job: str | None
    created_after: datetime | None
    created_before: datetime | None
    q: str | None


def _params(state: Sequence[str] | str | None, filters: BulkFilters) -> dict[str, Any]:
    params: dict[str, Any] = dict(filters)
    for name in ("created_after", "created_before"):
        params[name] = _instant(name, params.get(name))
    states = [state] if isinstance(state, str) else list(state or [])
    return _query(state=states, **params)


def preview_bulk(
    action: str, *, state: Sequence[str] | str | None = None, **filters: Unpack[BulkFilters]
) -> Call[JsonObject]:
    """``{"action", "count"}``: how many runs ``action`` (cancel, requeue, replay,
    delete) would act on now."""
    path = f"{BULK}/{action}/preview"
    found = yield Request("GET", path, _params(state, filters), retryable=True)
    return dict(found)


def run_bulk(
    action: str,
    expected_count: int,
    *,
    state: Sequence[str] | str | None = None,
    **filters: Unpack[BulkFilters],
) -> Call[JsonObject]:
    """``{"action", "matched", "affected", "skipped", "batches"}``; a 409 ApiError
    (count-changed) when the filter no longer matches ``expected_count`` runs. Not
    retried: a second try after a dropped answer meets a changed count and does
    nothing, which is safe; preview again to go on."""
    body = {"expected_count": expected_count}
    done = yield Request("POST", f"{BULK}/{action}", _params(state, filters), body=body)
    return dict(done)
