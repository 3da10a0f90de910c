"""Every enqueue goes through here: the library's, the API's triggers, the CLI's. One
place stamps the trace context on the runs and counts what was created."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rota.observe import hooks, tracing

if TYPE_CHECKING:
    from rota.domain.runs import Enqueued, NewRun
    from rota.store.port import Store


async def enqueue(store: Store, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]:
    with tracing.stamp_and_send(runs) as stamped:
        results = await store.enqueue(stamped, now)
    hooks.runs_enqueued(stamped, results)
    return results
