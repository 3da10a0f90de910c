"""The store port's bulk part: counting the runs a filter matches and deleting finished
runs by the batch (issue 29's bulk actions; the walk is rota.services.bulk_actions).

A Protocol of its own beside :class:`rota.store.port.Store`, handed out as
``Store.bulk``; :class:`rota.store.sql_store.SqlStore` implements both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rota.domain.search import RunSearch


class BulkRunStore(Protocol):
    async def count_matching_runs(self, search: RunSearch) -> tuple[int, int | None]:
        """How many runs ``search`` matches (its ``before_id`` and ``limit`` ignored),
        and the newest one's id (None when none match)."""

    async def delete_finished_runs(self, run_ids: Sequence[int]) -> int:
        """Delete those of ``run_ids`` that are finished and not a workflow's step, with
        their attempts, logs and idempotency keys, in one statement; how many went."""
