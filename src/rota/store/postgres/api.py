"""PostgreSQL: what the HTTP API keeps (run search, API keys, the audit log)."""

from __future__ import annotations

from datetime import datetime

from rota.domain.access import ApiKey, AuditEntry, AuditQuery, NewApiKey, NewAuditEntry
from rota.domain.runs import Run
from rota.domain.search import RunSearch, like_pattern
from rota.domain.stats import FinishedCount, QueueCount
from rota.store.api_rows import api_key_from_row, audit_from_row, audit_params
from rota.store.postgres.base import PgBase
from rota.store.rows import run_from_row
from rota.store.stats_rows import finished_count_from_row, positive_bucket, queue_count_from_row


class PgApi(PgBase):
    # -- api ------------------------------------------------------------------
    async def search_runs(self, search: RunSearch) -> list[Run]:
        rows = await self._rows(
            "search_runs",
            {
                "namespaces": list(search.namespaces) if search.namespaces is not None else None,
                "states": [s.value for s in search.states] or None,
                "handler": search.handler,
                "queue": search.queue,
                "tag": search.tag,
                "job_id": search.job_id,
                "created_after": search.created_after,
                "created_before": search.created_before,
                "pattern": like_pattern(search.text) if search.text else None,
                "before_id": search.before_id,
                "limit": search.limit,
            },
        )
        return [run_from_row(row) for row in rows]

    async def oldest_due_run_at(self, now: datetime | None) -> datetime | None:
        rows = await self._tuples("oldest_due_run_at", {"now": now})
        return rows[0][0] if rows else None

    async def live_queue_counts(self, now: datetime | None) -> list[QueueCount]:
        rows = await self._rows("live_queue_counts", {"now": now})
        return [queue_count_from_row(row) for row in rows]

    async def finished_counts(self, since: datetime, bucket_seconds: int) -> list[FinishedCount]:
        rows = await self._rows(
            "finished_counts", {"since": since, "bucket": positive_bucket(bucket_seconds)}
        )
        return [finished_count_from_row(row) for row in rows]

    async def create_api_key(self, key: NewApiKey, now: datetime | None) -> ApiKey:
        rows = await self._rows(
            "insert_api_key",
            {
                "key_id": key.key_id,
                "secret_hash": key.secret_hash,
                "name": key.name,
                "scopes": list(key.scopes),
                "namespaces": list(key.namespaces),
                "created_by": key.created_by,
                "now": now,
            },
        )
        return api_key_from_row(rows[0])

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        rows = await self._rows("get_api_key", {"key_id": key_id})
        return api_key_from_row(rows[0]) if rows else None

    async def list_api_keys(self) -> list[ApiKey]:
        return [api_key_from_row(row) for row in await self._rows("list_api_keys", {})]

    async def revoke_api_key(self, key_id: str, now: datetime | None) -> ApiKey | None:
        rows = await self._rows("revoke_api_key", {"key_id": key_id, "now": now})
        return api_key_from_row(rows[0]) if rows else None

    async def append_audit(self, entry: NewAuditEntry, now: datetime | None) -> int:
        rows = await self._tuples("append_audit", {**audit_params(entry), "now": now})
        return int(rows[0][0])

    async def list_audit(self, query: AuditQuery) -> list[AuditEntry]:
        rows = await self._rows(
            "list_audit",
            {
                "namespaces": list(query.namespaces) if query.namespaces is not None else None,
                "before_id": query.before_id,
                "limit": query.limit,
            },
        )
        return [audit_from_row(row) for row in rows]
