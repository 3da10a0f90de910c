"""Checking a start's values against its template's parameters off the event loop,
within a time budget (issue 31, ADR 0028).

The check itself is linear (rota.domain.linear_schema), but a 1 MiB payload against a
schema with many keywords still takes long enough to stall every other request, the
health checks and the embedded worker's lease renewals if it ran on the loop. So it
runs in a thread; a caller waits at most ``CHECK_BUDGET_SECONDS`` for it and is then
refused (the thread finishes on its own; no database transaction is open meanwhile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from rota.domain.parameters import InvalidParameter

CHECK_BUDGET_SECONDS = 2.0

T = TypeVar("T")


async def off_loop(check: Callable[..., T], *args: Any) -> T:
    """``check(*args)`` in a thread; InvalidParameter if it takes over the budget."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(check, *args), CHECK_BUDGET_SECONDS)
    except TimeoutError:
        raise InvalidParameter(
            None, f"values that can be checked within {CHECK_BUDGET_SECONDS:g} s"
        ) from None
