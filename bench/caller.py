"""(a)'s calls in a process of their own, as a caller's process holds them.

Its heap is the system's client alone: not the bench's results and charts, nor the
other systems' modules (this module imports none of them; a spawned child imports only
what its target's module does). In the bench's own process every full garbage
collection walked all of that, and a bulk enqueue makes enough objects to set one off:
it was measured as the enqueue's.
"""

from __future__ import annotations

import importlib

from bench.procs import Control


async def enqueue_in_caller(
    control: Control, module: str, url: str, total: int, batch: int
) -> None:
    """``module``'s ``enqueue_batches``: imported and connected before the start line,
    then timed by the module itself (the seconds its calls took)."""
    caller = importlib.import_module(module)
    control.ready()
    await control.wait_go()
    control.report({"seconds": await caller.enqueue_batches(url, total, batch)})
