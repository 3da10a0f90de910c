"""The HTTP API's limits, held in the database so they hold cluster-wide (ADR 0036):
each caller's request rate and the failed-authentication budgets of a source address
and of a claimed credential, counted per key in fixed windows that every server process
shares. Each call is one statement; the front end decides what to do when the database
cannot answer (rota.api.shared_limits)."""

from __future__ import annotations

from collections.abc import Sequence

from rota.clock import Clock
from rota.store.port import Store

RATE = "rate:"  # a caller's requests: rate:<principal.who>
AUTH = "auth:"  # failed authentications: auth:source:<address>, auth:credential:<id>


async def spend_request(
    store: Store, clock: Clock, subject: str, limit: int, window_seconds: float
) -> float | None:
    """Count one request of ``subject``: None if it is within ``limit`` for the current
    window, else the seconds until the window ends."""
    spent = await store.api_limits.spend_api_window(RATE + subject, window_seconds, clock.db_now())
    return spent.wait(limit)


async def auth_blocked(
    store: Store, clock: Clock, keys: Sequence[str], budget: int
) -> float | None:
    """Seconds until the last of ``keys`` that spent its budget may try again; None if
    none has (a read: nothing is counted)."""
    prefixed = [AUTH + key for key in keys]
    return await store.api_limits.full_api_windows(prefixed, budget, clock.db_now())


async def auth_failed(
    store: Store, clock: Clock, keys: Sequence[str], window_seconds: float
) -> None:
    """Count one failed authentication against each of ``keys``."""
    for key in keys:
        await store.api_limits.spend_api_window(AUTH + key, window_seconds, clock.db_now())


async def prune_windows(store: Store, clock: Clock, limit: int) -> int:
    """Delete up to ``limit`` windows that have ended (a housekeeping duty)."""
    return await store.api_limits.prune_api_windows(clock.db_now(), limit)
