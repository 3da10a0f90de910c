"""GET /metrics: Prometheus's text format. Who may scrape and what each caller sees:
rota.observe.scrape."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials

from rota.api.auth import ScopeGuard, bearer
from rota.api.context import api_context
from rota.api.problems import AUTHENTICATED, responses
from rota.domain.access import Principal, Scope
from rota.observe import exposition
from rota.observe.scrape import bearer_matches

router = APIRouter(tags=["metrics"])
SCRAPER = Principal(subject="scrape-token", kind="scrape", scopes=frozenset(), namespaces=None)


class MetricsGuard(ScopeGuard):
    """metrics:read, or the scrape token (ROTA_METRICS_TOKEN), which sees everything."""

    def __init__(self) -> None:
        super().__init__(Scope.METRICS)

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        token = api_context(request).settings.metrics_token
        if bearer_matches(request.headers.get("authorization"), token):  # type: ignore[arg-type]
            return SCRAPER
        return await super().__call__(request, credentials)


Scraper = Annotated[Principal, Depends(MetricsGuard())]


@router.get(
    "/metrics",
    responses={**responses(*AUTHENTICATED), 200: {"content": {exposition.CONTENT_TYPE: {}}}},
    response_class=Response,
)
async def metrics(principal: Scraper) -> Response:
    """This process's metrics, and the cluster's gauges when it leads; a caller limited
    to some namespaces gets only those namespaces' cluster gauges."""
    return Response(exposition.render(principal.namespaces), media_type=exposition.CONTENT_TYPE)
