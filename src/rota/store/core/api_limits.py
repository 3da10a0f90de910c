"""The one SQL store: the HTTP API's rate windows and failed-authentication budgets
(rota.store.limit_port, ADR 0036)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rota.domain.api_limits import WindowCount
from rota.store.core.base import CoreBase


class CoreApiLimits(CoreBase):
    async def spend_api_window(
        self, key: str, window_seconds: float, now: datetime | None
    ) -> WindowCount:
        params = {"key": key, "window_seconds": float(window_seconds)}
        [row] = await self._d.write("spend_api_window", params, now)
        return WindowCount(count=int(row["count"]), seconds_left=float(row["seconds_left"]))

    async def full_api_windows(
        self, keys: Sequence[str], limit: int, now: datetime | None
    ) -> float | None:
        if not keys:
            return None
        params = {"keys": list(keys), "limit": limit}
        rows = await self._d.rows("full_api_windows", params, now)
        return max(float(row["seconds_left"]) for row in rows) if rows else None

    async def prune_api_windows(self, now: datetime | None, limit: int) -> int:
        return len(await self._d.write("prune_api_windows", {"limit": limit}, now))
