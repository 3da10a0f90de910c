"""The one SQL store: the bulk part (rota.store.bulk_port)."""

from __future__ import annotations

from collections.abc import Sequence

from rota.domain.search import RunSearch, like_pattern
from rota.store.core.base import CoreBase
from rota.store.dialect import Session


class CoreBulk(CoreBase):
    async def count_matching_runs(self, search: RunSearch) -> tuple[int, int | None]:
        rows = await self._d.rows(
            "count_matching_runs",
            {
                "namespaces": None if search.namespaces is None else list(search.namespaces),
                "states": [s.value for s in search.states] or None,
                "handler": search.handler,
                "queue": search.queue,
                "tag": search.tag,
                "job_id": search.job_id,
                "created_after": search.created_after,
                "created_before": search.created_before,
                "pattern": like_pattern(search.text) if search.text else None,
            },
        )
        top_id = rows[0]["top_id"]
        return int(rows[0]["count"]), None if top_id is None else int(top_id)

    async def delete_finished_runs(self, run_ids: Sequence[int]) -> int:
        if not run_ids:
            return 0

        async def delete(session: Session) -> int:
            return len(await session.rows("delete_finished_runs", {"ids": list(run_ids)}))

        return await self._d.in_transaction(None, delete)
