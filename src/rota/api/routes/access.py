"""Access: API keys (admins create and revoke them) and the audit log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from rota.api import pagination
from rota.api.auth import Admin
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.access import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyList,
    ApiKeyOut,
    AuditOut,
    AuditPage,
)
from rota.services import access

router = APIRouter(prefix="/api/v1", tags=["access"])
KeyId = Annotated[str, Path(pattern=r"^[0-9a-f]{16}$")]
CURSOR = "audit"


@router.get("/api-keys", responses=responses(*AUTHENTICATED))
async def list_api_keys(principal: Admin, store: StoreDep) -> ApiKeyList:
    """Keys reaching only namespaces the caller reaches (never their secrets)."""
    keys = await access.list_api_keys(store, principal)
    return ApiKeyList(items=[ApiKeyOut.of(key) for key in keys])


@router.post("/api-keys", status_code=201, responses=responses(*AUTHENTICATED, 400))
async def create_api_key(
    request: Request, principal: Admin, context: Context, store: StoreDep, body: ApiKeyCreate
) -> ApiKeyCreated:
    """A key for a machine. The response holds the key itself, shown this once."""
    audit_target(request, f"api key {body.name}")
    key, plaintext = await access.create_api_key(
        store, context.clock, principal, body.name, [s.value for s in body.scopes], body.namespaces
    )
    request.state.audit_target = f"api key {key.key_id} ({key.name})"
    return ApiKeyCreated(**ApiKeyOut.of(key).model_dump(), key=plaintext)


@router.delete("/api-keys/{key_id}", status_code=204, responses=responses(*AUTHENTICATED, 404))
async def revoke_api_key(
    request: Request, key_id: KeyId, principal: Admin, context: Context, store: StoreDep
) -> Response:
    """Revoke a key: it stops working at once. Revoking again is harmless."""
    audit_target(request, f"api key {key_id}")
    await access.revoke_api_key(store, context.clock, principal, key_id)
    return Response(status_code=204)


@router.get("/audit", responses=responses(*AUTHENTICATED, 400))
async def audit_log(
    principal: Admin,
    store: StoreDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> AuditPage:
    """Every mutating call, newest first: who, what, target, result, correlation id."""
    entries = await access.audit_log(store, principal, pagination.decode(CURSOR, cursor), limit)
    return AuditPage(
        items=[AuditOut.of(e) for e in entries],
        next_cursor=pagination.next_cursor(CURSOR, [e.id for e in entries], limit),
    )
