"""The one SQL store: reading runs (operators, the API's search, the cluster counts)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from rota.domain.labels import labels_json
from rota.domain.runs import LOG_READ_LIMIT, Attempt, LogLine, Run, RunFilter
from rota.domain.search import RunSearch, like_pattern
from rota.domain.states import TERMINAL_STATES, RunState
from rota.domain.stats import MINUTE, FinishedCount, QueueCount, minute_ceil
from rota.store.core.base import CoreBase
from rota.store.rows import attempt_from_row, log_from_row, run_from_row
from rota.store.stats_rows import finished_count_from_row, positive_bucket, queue_count_from_row


def search_filter(search: RunSearch) -> dict[str, Any]:
    """The parameters of a run search's WHERE, which search_runs and the bulk actions'
    count_matching_runs share (tests/store/test_sql_copies.py holds their SQL together)."""
    return {
        "namespaces": None if search.namespaces is None else list(search.namespaces),
        "states": [s.value for s in search.states] or None,
        "handler": search.handler,
        "queue": search.queue,
        "tag": search.tag,
        "job_id": search.job_id,
        "created_after": search.created_after,
        "created_before": search.created_before,
        "pattern": like_pattern(search.text) if search.text else None,
        "owner": search.owner,
        "labels": labels_json(search.labels),
        "priority": search.priority,
        # Which homes can hold a run of the states asked for (ADR 0027): a finished run
        # is in history, any other in the queue table. SQLite reads only those; on
        # PostgreSQL the partition key prunes the same way by itself.
        "in_live": not search.states or any(s not in TERMINAL_STATES for s in search.states),
        "in_history": not search.states or any(s in TERMINAL_STATES for s in search.states),
    }


class CoreReads(CoreBase):
    async def get_run(self, run_id: int) -> Run | None:
        rows = await self._d.rows("get_run", {"id": run_id})
        return run_from_row(rows[0]) if rows else None

    async def list_runs(self, run_filter: RunFilter) -> list[Run]:
        rows = await self._d.rows(
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
        return [attempt_from_row(row) for row in await self._d.rows("attempts", {"id": run_id})]

    async def logs(
        self, run_id: int, after: int | None = None, limit: int = LOG_READ_LIMIT
    ) -> list[LogLine]:
        rows = await self._d.rows("logs", {"id": run_id, "after": after, "limit": limit})
        # PostgreSQL hands jsonb back decoded, SQLite as the stored text.
        return [
            log_from_row(row, f if isinstance(f := row["fields"], str) else json.dumps(f))
            for row in rows
        ]

    async def search_runs(self, search: RunSearch) -> list[Run]:
        params = {**search_filter(search), "before_id": search.before_id, "limit": search.limit}
        rows = await self._d.rows("search_runs", params)
        return [run_from_row(row) for row in rows]

    async def oldest_due_run_at(self, now: datetime | None) -> datetime | None:
        rows = await self._d.rows("oldest_due_run_at", {}, now)
        return rows[0]["run_at"] if rows else None

    async def live_queue_counts(self, now: datetime | None) -> list[QueueCount]:
        rows = await self._d.rows("live_queue_counts", {}, now)
        return [queue_count_from_row(row) for row in rows]

    async def finished_counts(self, since: datetime, bucket_seconds: int) -> list[FinishedCount]:
        bucket = positive_bucket(bucket_seconds)
        counted = await self._d.rows("chart_counted_until", {})
        whole = minute_ceil(since)
        if (
            not counted
            or counted[0]["counted_from"] is None
            or bucket % MINUTE
            or not counted[0]["counted_from"] <= whole < counted[0]["counted_until"]
        ):
            return await self._finished_runs(since, None, bucket)  # no minutes to use
        # The leader's per-minute counts (the charts' rollup), and the runs on either
        # side of them: those of the part-minute before and of the minutes not counted yet.
        until = counted[0]["counted_until"]
        minutes = await self._d.rows(
            "finished_minutes", {"since": whole, "until": until, "bucket": bucket}
        )
        sums: Counter[tuple[datetime, str, str, RunState]] = Counter()
        parts = [finished_count_from_row(row) for row in minutes]
        if since < whole:
            parts += await self._finished_runs(since, whole, bucket)
        parts += await self._finished_runs(until, None, bucket)
        for c in parts:
            sums[(c.bucket_start, c.namespace, c.queue, c.state)] += c.count
        return [FinishedCount(*key, count) for key, count in sorted(sums.items())]

    async def _finished_runs(
        self, since: datetime, until: datetime | None, bucket: int
    ) -> list[FinishedCount]:
        params = {"since": since, "until": until, "bucket": bucket}
        rows = await self._d.rows("finished_counts", params)
        return [finished_count_from_row(row) for row in rows]
