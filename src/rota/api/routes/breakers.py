"""Circuit breakers: their state and recent transitions, and an operator's reset.

Reading needs jobs:read; a reset changes what every namespace's runs of that handler
get, so, like draining a worker, it needs jobs:admin and every namespace
(``ClusterAdmin``). ADR 0016."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field

from rota.api.auth import ClusterAdmin, Reader
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.fields import Name
from rota.domain.breakers import BreakerRow, BreakerState, Transition
from rota.services import controls as control_service

router = APIRouter(prefix="/api/v1", tags=["cluster"])


def _at(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1_000_000, UTC)


class BreakerOut(BaseModel):
    handler: str
    key: str = Field(description="The runs' breaker_key; empty for runs without one.")
    state: BreakerState
    failures: int = Field(description="Failures in a row in the current streak.")
    probes_left: int
    opened_at: datetime | None
    cause: str | None = Field(description="Why it last changed state.")
    window_started_at: datetime | None = Field(
        description="When the current failure-rate window began (null: no outcome in a "
        "window now, or the rule counts no rate)."
    )
    window_calls: int = Field(description="Outcomes counted in the current window.")
    window_failures: int = Field(description="Failed outcomes among them.")

    @classmethod
    def of(cls, row: BreakerRow) -> BreakerOut:
        return cls(
            handler=row.handler,
            key=row.key,
            state=row.state,
            failures=row.failures,
            probes_left=row.probes_left,
            opened_at=None if row.opened_at is None else _at(row.opened_at),
            cause=row.cause,
            window_started_at=None if row.window_started_at is None else _at(row.window_started_at),
            window_calls=row.window_calls,
            window_failures=row.window_failures,
        )


class TransitionOut(BaseModel):
    handler: str
    key: str
    from_state: BreakerState
    to_state: BreakerState
    at: datetime
    cause: str

    @classmethod
    def of(cls, t: Transition) -> TransitionOut:
        return cls(
            handler=t.handler,
            key=t.key,
            from_state=t.from_state,
            to_state=t.to_state,
            at=_at(t.at),
            cause=t.cause,
        )


class BreakerList(BaseModel):
    items: list[BreakerOut]
    transitions: list[TransitionOut] = Field(description="The newest transitions first.")


@router.get("/breakers", responses=responses(*AUTHENTICATED))
async def list_breakers(
    principal: Reader,
    context: Context,
    store: StoreDep,
    transitions: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> BreakerList:
    """Every breaker that has seen an outcome (state, cause, the current failure-rate
    window's outcomes), and the newest transitions. A caller limited to some namespaces
    sees the breakers that runs of those namespaces moved, and their transitions."""
    reach = principal.namespaces
    rows = await control_service.list_breakers(store, context.clock, reach)
    moves = await control_service.breaker_transitions(store, transitions, reach)
    return BreakerList(
        items=[BreakerOut.of(r) for r in rows], transitions=[TransitionOut.of(t) for t in moves]
    )


@router.post("/breakers/{handler}/reset", responses=responses(*AUTHENTICATED, 422))
async def reset_breaker(
    request: Request,
    handler: Annotated[Name, Path()],
    principal: ClusterAdmin,
    context: Context,
    store: StoreDep,
    key: Annotated[str, Query(max_length=200)] = "",
) -> BreakerOut:
    """Close the breaker of ``handler`` (and ``key``) now; recorded as a transition."""
    audit_target(request, f"breaker {handler}")
    row = await control_service.reset_breaker(store, context.clock, handler, key)
    return BreakerOut.of(row)
