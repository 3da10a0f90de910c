"""The one SQL store: what the HTTP API keeps (API keys, the audit log) and the
dashboard's signed-out sessions."""

from __future__ import annotations

from datetime import datetime

from rota.domain.access import ApiKey, AuditEntry, AuditQuery, NewApiKey, NewAuditEntry
from rota.store.api_rows import api_key_from_row, audit_from_row, audit_params
from rota.store.core.base import CoreBase


class CoreAccess(CoreBase):
    async def create_api_key(self, key: NewApiKey, now: datetime | None) -> ApiKey:
        params = {
            "key_id": key.key_id,
            "secret_hash": key.secret_hash,
            "name": key.name,
            "scopes": list(key.scopes),
            "namespaces": list(key.namespaces),
            "created_by": key.created_by,
        }
        [row] = await self._d.write("insert_api_key", params, now)
        return api_key_from_row(row)

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        rows = await self._d.rows("get_api_key", {"key_id": key_id})
        return api_key_from_row(rows[0]) if rows else None

    async def list_api_keys(self) -> list[ApiKey]:
        return [api_key_from_row(row) for row in await self._d.rows("list_api_keys")]

    async def revoke_api_key(self, key_id: str, now: datetime | None) -> ApiKey | None:
        rows = await self._d.write("revoke_api_key", {"key_id": key_id}, now)
        return api_key_from_row(rows[0]) if rows else None

    async def sign_out_session(
        self, session_id: str, expires_at: datetime, now: datetime | None
    ) -> None:
        await self._d.write(
            "sign_out_session", {"session_id": session_id, "expires_at": expires_at}, now
        )
        await self._d.write("prune_signed_out_sessions", {}, now)

    async def session_signed_out(self, session_id: str) -> bool:
        return bool(await self._d.rows("session_signed_out", {"session_id": session_id}))

    async def append_audit(self, entry: NewAuditEntry, now: datetime | None) -> int:
        [row] = await self._d.write("append_audit", audit_params(entry), now)
        return int(row["id"])

    async def list_audit(self, query: AuditQuery) -> list[AuditEntry]:
        params = {
            "namespaces": None if query.namespaces is None else list(query.namespaces),
            "before_id": query.before_id,
            "limit": query.limit,
        }
        return [audit_from_row(row) for row in await self._d.rows("list_audit", params)]
