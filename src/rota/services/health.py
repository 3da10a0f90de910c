"""Readiness: can this node serve and will its runs be worked? A use case of its own so
the HTTP probe, the CLI and tests ask the same questions."""

from __future__ import annotations

from rota.clock import Clock
from rota.store.port import Store


async def unready_reasons(store: Store, clock: Clock, max_due_wait_seconds: float) -> list[str]:
    """Why this node is not ready; empty when it is. Raises StoreUnavailable when the
    database cannot be reached (the caller reports that as the reason)."""
    status = await store.schema_status()
    if status.current < status.latest:
        return [
            f"database schema is version {status.current}, behind this rota's "
            f"{status.latest}: run `rota db upgrade`"
        ]
    if status.current > status.latest:
        return [
            f"database schema is version {status.current}, newer than this rota's "
            f"{status.latest}: upgrade rota"
        ]
    oldest = await store.oldest_due_run_at(clock.db_now())
    if oldest is None:
        return []
    waited = (await store.now(clock.db_now()) - oldest).total_seconds()
    if waited > max_due_wait_seconds:
        return [
            f"a due run has waited {waited:.0f} s for a worker "
            f"(threshold {max_due_wait_seconds:g} s)"
        ]
    return []
