"""Backfill a job's schedule over a range (jobs:trigger; ADR 0024)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from rota.api.auth import Trigger
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.fields import Instant, Name
from rota.domain.backfill import CONFIRM_ABOVE, MAX_BACKFILL_SLOTS, BackfillRequest
from rota.errors import JobNotFound
from rota.services import backfill

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])
Slots = Annotated[int, Field(ge=1, le=MAX_BACKFILL_SLOTS)]


class BackfillBody(BaseModel):
    """Slots of the job's schedule at or after ``from`` and before ``to``, in the
    schedule's own time zone and DST rules."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"from": "2026-10-19T00:00:00+02:00", "to": "2026-10-26T00:00:00+01:00"}]
        },
    )

    start: Instant = Field(alias="from")
    end: Instant = Field(alias="to")
    max_in_flight: Slots | None = Field(
        default=None, description="At most this many of the backfill's runs run at once."
    )
    confirm: bool = Field(default=False, description=f"Needed for more than {CONFIRM_ABOVE} slots.")
    limit: Slots | None = Field(
        default=None, description="Handle only the first this many slots (see next_from)."
    )
    dry_run: bool = Field(default=False, description="Count the slots; write nothing.")


class BackfillOut(BaseModel):
    total: int = Field(description="Slots in the whole range.")
    slots: int = Field(description="Slots this call handled.")
    created: int
    existing: int = Field(description="Slots that had a run already (nothing new made).")
    first_slot: datetime | None
    last_slot: datetime | None
    next_from: datetime | None = Field(
        description="Where the rest of the range begins (pass as from); null when done."
    )


@router.post("/{name}/backfill", responses=responses(*AUTHENTICATED, 400, 404))
async def backfill_job(
    request: Request,
    name: Name,
    principal: Trigger,
    context: Context,
    store: StoreDep,
    body: BackfillBody,
    namespace: Annotated[Name, Query(description="The job's namespace.")] = "default",
) -> BackfillOut:
    """One run per slot of the job's schedule in [from, to); running it again
    creates nothing new. More than 1,000 slots need ``confirm``; more than 10,000 are
    refused (split the range)."""
    audit_target(request, f"job {namespace}/{name}", namespace)
    if not principal.can_see(namespace):
        raise JobNotFound(namespace, name)
    asked = BackfillRequest(
        body.start, body.end, body.max_in_flight, body.confirm, body.limit, body.dry_run
    )
    result = await backfill.backfill(store, context.clock, namespace, name, asked)
    return BackfillOut(**asdict(result))
