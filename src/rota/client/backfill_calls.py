"""The HTTP client's backfill call (``POST /api/v1/jobs/{name}/backfill``), written
once like the rest (see rota.client.calls). Safe to retry: each slot's run is made once."""

from __future__ import annotations

from datetime import datetime

from rota.client.calls import Call, JsonObject, Request, _query


def backfill_job(
    name: str,
    start: datetime,
    end: datetime,
    *,
    namespace: str = "default",
    max_in_flight: int | None = None,
    confirm: bool = False,
    limit: int | None = None,
    dry_run: bool = False,
) -> Call[JsonObject]:
    """``{"total", "slots", "created", "existing", "first_slot", "last_slot",
    "next_from"}``: pass ``next_from`` as the next call's ``start`` to go on."""
    body = {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "confirm": confirm,
        "dry_run": dry_run,
    } | _query(max_in_flight=max_in_flight, limit=limit)
    path = f"/api/v1/jobs/{name}/backfill"
    done = yield Request("POST", path, {"namespace": namespace}, body=body, retryable=True)
    return dict(done)
