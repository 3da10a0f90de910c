"""The one SQL store: the bulk part (rota.store.bulk_port)."""

from __future__ import annotations

from collections.abc import Sequence

from rota.domain.search import RunSearch
from rota.store.core.base import CoreBase
from rota.store.core.reads import search_filter
from rota.store.dialect import Session


class CoreBulk(CoreBase):
    async def count_matching_runs(self, search: RunSearch) -> tuple[int, int | None]:
        rows = await self._d.rows("count_matching_runs", search_filter(search))
        top_id = rows[0]["top_id"]
        return int(rows[0]["count"]), None if top_id is None else int(top_id)

    async def delete_finished_runs(self, run_ids: Sequence[int]) -> int:
        if not run_ids:
            return 0

        async def delete(session: Session) -> int:
            return len(await session.rows("delete_finished_runs", {"ids": list(run_ids)}))

        return await self._d.in_transaction(None, delete)
