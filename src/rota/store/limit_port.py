"""The store port's part for the HTTP API's limits (ADR 0036): request rate windows and
failed-authentication budgets counted in the database, so every server process counts
against the same limit.

A Protocol of its own beside :class:`rota.store.port.Store` (as the webhook and event
parts are), handed out by ``Store.api_limits``; :class:`rota.store.sql_store.SqlStore`
implements it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rota.domain.api_limits import WindowCount


class ApiLimitStore(Protocol):
    async def spend_api_window(
        self, key: str, window_seconds: float, now: datetime | None
    ) -> WindowCount:
        """Count one hit on ``key`` in one atomic statement: a key without a current
        window starts one of ``window_seconds`` at now."""

    async def full_api_windows(
        self, keys: Sequence[str], limit: int, now: datetime | None
    ) -> float | None:
        """Seconds until the last of ``keys`` whose current window holds at least
        ``limit`` hits ends; None when none does (nothing is counted)."""

    async def prune_api_windows(self, now: datetime | None, limit: int) -> int:
        """Delete up to ``limit`` windows that have ended; how many were."""
