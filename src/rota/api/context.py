"""What every route needs, held on ``app.state.rota`` and handed out by dependencies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, cast

from fastapi import Depends, Request

from rota.api.settings import ApiSettings
from rota.api.shared_limits import SharedLimits
from rota.app import App
from rota.clock import Clock
from rota.store.port import Store


@dataclass
class ApiContext:
    rota_app: App
    settings: ApiSettings
    # the request rate per caller, failed authentications per source address and per
    # credential id: counted in the database, shared by every server process
    limits: SharedLimits

    @property
    def clock(self) -> Clock:
        return self.rota_app.clock

    async def store(self) -> Store:
        """The store of the running event loop (opened and migrated on first use)."""
        return await self.rota_app.store()


def api_context(request: Request) -> ApiContext:
    return cast(ApiContext, request.app.state.rota)


async def request_store(request: Request) -> Store:
    return await api_context(request).store()


Context = Annotated[ApiContext, Depends(api_context)]
StoreDep = Annotated[Store, Depends(request_store)]


def correlation_id(request: Request) -> str | None:
    value = request.scope.get("state", {}).get("correlation_id")
    return str(value) if value is not None else None


def audit_target(request: Request, target: str, namespace: str | None = None) -> None:
    """Say what a mutating call is about, for its audit entry."""
    request.state.audit_target = target
    request.state.audit_namespace = namespace
