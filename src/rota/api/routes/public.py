"""Routes without a token: health probes, and the dev token endpoint (not in production).

Everything else needs a token; the auth-matrix test holds this list."""

from __future__ import annotations

from fastapi import APIRouter

from rota.api.auth import mint_token
from rota.api.context import Context
from rota.api.problems import ProblemException, responses
from rota.api.schemas.access import DevTokenRequest, TokenOut
from rota.api.schemas.cluster import HealthOut
from rota.domain.access import ROLE_SCOPES, parse_namespaces
from rota.errors import InvalidArgument, RotaError, StoreUnavailable
from rota.services import health

health_router = APIRouter(prefix="/health", tags=["health"])
dev_router = APIRouter(prefix="/dev", tags=["development"])


@health_router.get("/live")
async def live() -> HealthOut:
    """The process answers. (It says nothing about the database: see /health/ready.)"""
    return HealthOut(status="live")


@health_router.get("/ready", responses=responses(503))
async def ready(context: Context) -> HealthOut:
    """200 when the database answers, its schema is current and no due run has waited
    longer than the threshold for a worker; otherwise 503 with the reason."""
    try:
        store = await context.store()
        reasons = await health.unready_reasons(
            store, context.clock, context.settings.ready_max_due_wait_seconds
        )
    except StoreUnavailable as exc:
        reasons = [f"database unreachable: {exc}"]
    except RotaError as exc:
        reasons = [str(exc)]
    if reasons:
        raise ProblemException(503, "; ".join(reasons), kind="not-ready")
    return HealthOut(status="ready")


@dev_router.post("/token", responses=responses(400, 413, 422))
async def dev_token(context: Context, body: DevTokenRequest) -> TokenOut:
    """A signed token for development, with a role or scopes of your choosing. This
    route does not exist when ROTA_ENV=production."""
    limit = context.settings.max_token_lifetime_seconds
    if body.ttl_seconds > limit:
        raise InvalidArgument("ttl_seconds", body.ttl_seconds, f"at most {limit} seconds")
    scopes = {s.value for s in body.scopes}
    if body.role is not None:
        scopes |= {s.value for s in ROLE_SCOPES[body.role]}
    parse_namespaces(body.namespaces)
    token = mint_token(
        context.settings,
        body.subject,
        context.clock.now(),
        scopes=scopes,
        namespaces=body.namespaces,
        ttl_seconds=body.ttl_seconds,
    )
    return TokenOut(
        access_token=token,
        expires_in=body.ttl_seconds,
        scopes=sorted(scopes),
        namespaces=body.namespaces,
    )
