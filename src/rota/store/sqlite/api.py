"""SQLite: what the HTTP API keeps (run search, API keys, the audit log)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rota.domain.access import ApiKey, AuditEntry, AuditQuery, NewApiKey, NewAuditEntry
from rota.domain.runs import (
    Run,
)
from rota.domain.search import RunSearch, like_pattern
from rota.domain.stats import FinishedCount, QueueCount
from rota.store.api_rows import api_key_from_row, audit_from_row, audit_params
from rota.store.rows import run_from_row
from rota.store.sqlite.base import Q, SqliteBase, _decoded, _dt, _ts
from rota.store.stats_rows import finished_count_from_row, positive_bucket, queue_count_from_row


class SqliteApi(SqliteBase):
    async def search_runs(self, search: RunSearch) -> list[Run]:
        rows = await self._rows(
            "search_runs",
            {
                "namespaces": self._json_array(search.namespaces),
                "states": self._json_array([s.value for s in search.states] or None),
                "handler": search.handler,
                "queue": search.queue,
                "tag": search.tag,
                "job_id": search.job_id,
                "created_after": _ts(search.created_after),
                "created_before": _ts(search.created_before),
                "pattern": like_pattern(search.text) if search.text else None,
                "before_id": search.before_id,
                "limit": search.limit,
            },
        )
        return [run_from_row(row) for row in rows]

    async def oldest_due_run_at(self, now: datetime | None) -> datetime | None:
        def work(conn: sqlite3.Connection) -> float | None:
            at = now.timestamp() if now else conn.execute(Q["db_now"]).fetchone()[0]
            value = conn.execute(Q["oldest_due_run_at"], {"now": at}).fetchone()[0]
            return None if value is None else float(value)

        return _dt(await self._call(work))

    async def live_queue_counts(self, now: datetime | None) -> list[QueueCount]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            at = now.timestamp() if now else conn.execute(Q["db_now"]).fetchone()[0]
            return [_decoded(row) for row in conn.execute(Q["live_queue_counts"], {"now": at})]

        return [queue_count_from_row(row) for row in await self._call(work)]

    async def finished_counts(self, since: datetime, bucket_seconds: int) -> list[FinishedCount]:
        rows = await self._rows(
            "finished_counts", {"since": _ts(since), "bucket": positive_bucket(bucket_seconds)}
        )
        return [finished_count_from_row(row) for row in rows]

    async def _api_key_rows(
        self, query: str, params: dict[str, Any], now: datetime | None = None, write: bool = False
    ) -> list[ApiKey]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if not write:
                return [dict(row) for row in conn.execute(Q[query], params)]
            with self._write(conn, now) as at:
                return [dict(row) for row in conn.execute(Q[query], {**params, "now": at})]

        keys = []
        for row in await self._call(work):
            row.update(
                scopes=json.loads(row["scopes"]),
                namespaces=json.loads(row["namespaces"]),
                created_at=_dt(row["created_at"]),
                revoked_at=_dt(row["revoked_at"]),
            )
            keys.append(api_key_from_row(row))
        return keys

    async def create_api_key(self, key: NewApiKey, now: datetime | None) -> ApiKey:
        params = {
            "key_id": key.key_id,
            "secret_hash": key.secret_hash,
            "name": key.name,
            "scopes": json.dumps(list(key.scopes)),
            "namespaces": json.dumps(list(key.namespaces)),
            "created_by": key.created_by,
        }
        [created] = await self._api_key_rows("insert_api_key", params, now, write=True)
        return created

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        keys = await self._api_key_rows("get_api_key", {"key_id": key_id})
        return keys[0] if keys else None

    async def list_api_keys(self) -> list[ApiKey]:
        return await self._api_key_rows("list_api_keys", {})

    async def revoke_api_key(self, key_id: str, now: datetime | None) -> ApiKey | None:
        keys = await self._api_key_rows("revoke_api_key", {"key_id": key_id}, now, write=True)
        return keys[0] if keys else None

    async def append_audit(self, entry: NewAuditEntry, now: datetime | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            with self._write(conn, now) as at:
                params = {**audit_params(entry), "now": at}
                return int(conn.execute(Q["append_audit"], params).fetchone()[0])

        return await self._call(work)

    async def list_audit(self, query: AuditQuery) -> list[AuditEntry]:
        rows = await self._rows(
            "list_audit",
            {
                "namespaces": self._json_array(query.namespaces),
                "before_id": query.before_id,
                "limit": query.limit,
            },
        )
        return [audit_from_row(row) for row in rows]

    @staticmethod
    def _json_array(values: Sequence[str] | None) -> str | None:
        return None if values is None else json.dumps(list(values))
