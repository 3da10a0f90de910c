"""The one SQL store: queues an operator pauses and resumes (ADR 0035).

The claim statements read ``rota_queues`` themselves and skip a paused queue, so a
pause holds from the next claim on every worker. Each process also keeps a copy of the
paused set, read at most once a second (``Recent``) and handed out from memory in
between: a claim drops paused queues from its request before any statement, and
``next_due_in`` does not wake a worker for a paused queue's runs. A process that pauses
or resumes a queue forgets its copy; others see a resume within a second.
"""

from __future__ import annotations

from datetime import datetime

from rota.domain.queues import QueueControl
from rota.store.core.base import CoreBase
from rota.store.core.recent import Recent
from rota.store.dialect import Row


def control_from_row(row: Row) -> QueueControl:
    return QueueControl(
        name=row["name"],
        paused=bool(row["paused"]),
        paused_at=row["paused_at"],
        paused_by=row["paused_by"],
    )


class CoreQueues(CoreBase):
    _paused: Recent[frozenset[str]]  # set in SqlStore.__init__

    async def _read_paused(self) -> frozenset[str]:
        return frozenset(row["name"] for row in await self._d.rows("paused_queues"))

    async def paused_queues(self) -> frozenset[str]:
        """The paused queues as this process's copy has them (at most ~1 s old)."""
        return await self._paused.get()

    async def list_queues(self) -> list[QueueControl]:
        return [control_from_row(row) for row in await self._d.rows("queues")]

    async def set_queue_paused(
        self, name: str, paused: bool, paused_by: str | None, now: datetime | None
    ) -> QueueControl:
        params = {"name": name, "paused": paused, "paused_by": paused_by}
        [row] = await self._d.write("set_queue_paused", params, now)
        self._paused.forget()
        return control_from_row(row)
