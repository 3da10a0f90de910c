"""Reading runs, shared by both stores: the queries differ only in their SQL files, so
each adapter supplies ``_rows`` (named query -> rows as dicts, instants and JSON already
decoded) and this mixin turns rows into domain values."""

from __future__ import annotations

import json
from typing import Any

from rota.domain.runs import Attempt, LogLine, Run, RunFilter
from rota.store.rows import attempt_from_row, log_from_row, run_from_row


class RunReads:
    async def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def get_run(self, run_id: int) -> Run | None:
        rows = await self._rows("get_run", {"id": run_id})
        return run_from_row(rows[0]) if rows else None

    async def list_runs(self, run_filter: RunFilter) -> list[Run]:
        rows = await self._rows(
            "list_runs",
            {
                "state": run_filter.state.value if run_filter.state else None,
                "handler": run_filter.handler,
                "queue": run_filter.queue,
                "before_id": run_filter.before_id,
                "limit": run_filter.limit,
            },
        )
        return [run_from_row(row) for row in rows]

    async def attempts(self, run_id: int) -> list[Attempt]:
        return [attempt_from_row(row) for row in await self._rows("attempts", {"id": run_id})]

    async def logs(self, run_id: int) -> list[LogLine]:
        rows = await self._rows("logs", {"id": run_id})
        # PostgreSQL hands jsonb back decoded, SQLite as the stored text.
        return [
            log_from_row(row, f if isinstance(f := row["fields"], str) else json.dumps(f))
            for row in rows
        ]
