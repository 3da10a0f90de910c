"""The change feed on its own: a page that reconnects having missed a change (or from
another process) is told at once; the poller stops when the last listener leaves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from rota.dashboard.feed import ChangeFeed
from rota.supervise import Restarts
from tests.helpers import eventually


async def _next(changes: AsyncIterator[str | None]) -> str | None:
    return await asyncio.wait_for(anext(changes), timeout=10)


async def test_a_reconnecting_page_catches_up_and_the_poller_stops() -> None:
    signature = [0]

    async def read() -> int:
        return signature[0]

    feed = ChangeFeed(read, interval=0.01, restarts=Restarts())
    first = feed.changes(None, keepalive=5)
    seen = await _next(first)  # the poller's first reading counts as a change
    assert seen == feed.event_id
    signature[0] = 1
    changed = await _next(first)
    assert changed is not None
    assert changed != seen
    await first.aclose()
    await eventually(lambda: _true(feed.listeners == 0), what="the listener to leave")
    # Reconnecting with the id before the change: told at once, no waiting for another.
    again = feed.changes(seen, keepalive=5)
    assert await _next(again) == feed.event_id
    await again.aclose()
    # From another process (another epoch): told at once too.
    other = feed.changes("deadbeef.3", keepalive=5)
    assert await _next(other) == feed.event_id
    await other.aclose()
    # Nobody listens: the poller ends by itself.
    await eventually(lambda: _true(feed._task is None or feed._task.done()), what="stop")
    await feed.aclose()


async def test_a_quiet_feed_sends_keepalives() -> None:
    async def read() -> int:
        return 0

    feed = ChangeFeed(read, interval=0.01, restarts=Restarts())
    changes = feed.changes(None, keepalive=0.05)
    assert await _next(changes) is not None  # the first reading
    assert await _next(changes) is None  # then only keep-alives
    await changes.aclose()
    await feed.aclose()


async def _true(value: bool) -> bool:
    return value
