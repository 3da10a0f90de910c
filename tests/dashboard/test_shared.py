"""A shared read: a hundred requests at once make one read; a fresh value is reused;
a stale one is read again; a failed read fails its waiters and is tried afresh."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from rota.clock import FakeClock
from rota.dashboard.shared import Shared


def answering(*answers: int | Exception) -> Callable[[], Awaitable[int]]:
    """A read that gives each answer in turn (raising the exceptions)."""
    left = list(answers)

    async def read() -> int:
        answer = left.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return read


class CountingRead:
    """A read that answers how many times it has been called; from call ``held_from``
    on, it answers only once ``release`` is set."""

    def __init__(self, held_from: int = 1) -> None:
        self.calls = 0
        self.held_from = held_from
        self.release = asyncio.Event()

    async def __call__(self) -> int:
        self.calls += 1
        call = self.calls
        if call >= self.held_from:
            await self.release.wait()
        return call


async def test_concurrent_requests_share_one_read() -> None:
    clock = FakeClock()
    read = CountingRead()
    shared = Shared(read, fresh=1.0, monotonic=clock.monotonic)
    waiters = [asyncio.create_task(shared.get()) for _ in range(100)]
    await asyncio.sleep(0)
    read.release.set()
    assert await asyncio.gather(*waiters) == [1] * 100
    assert await shared.get() == 1  # fresh: reused
    clock.advance(2)
    assert await shared.get() == 2  # stale: read again
    assert await shared.get(fresh=0.0) == 3  # the change feed always wants a new reading


async def test_a_failed_read_fails_its_waiters_and_the_next_one_reads_again() -> None:
    clock = FakeClock()
    shared = Shared(answering(RuntimeError("database down"), 7), 1.0, clock.monotonic)
    with pytest.raises(RuntimeError, match="database down"):
        await shared.get()
    assert await shared.get() == 7


async def test_a_slightly_stale_value_is_served_while_a_new_one_is_read_behind() -> None:
    clock = FakeClock()
    read = CountingRead(held_from=2)
    shared = Shared(read, fresh=1.0, monotonic=clock.monotonic, stale_for=5.0)
    assert await shared.get() == 1
    clock.advance(2)
    # Past fresh, within stale_for: the old value at once, one read started behind it.
    assert await shared.get() == 1
    assert await shared.get() == 1
    await asyncio.sleep(0)  # the read behind starts
    assert read.calls == 2
    # The change feed always waits for a new reading: the one in flight.
    feed = asyncio.create_task(shared.get(fresh=0.0))
    await asyncio.sleep(0)
    assert not feed.done()
    read.release.set()
    assert await asyncio.wait_for(feed, timeout=5) == 2
    assert read.calls == 2
    # Past fresh + stale_for: the request waits for a new reading.
    clock.advance(10)
    assert await shared.get() == 3


async def test_a_failed_read_behind_keeps_the_last_good_value() -> None:
    clock = FakeClock()
    read = answering(1, RuntimeError("database down"), 3)
    shared = Shared(read, fresh=1.0, monotonic=clock.monotonic, stale_for=5.0)
    assert await shared.get() == 1
    clock.advance(2)
    assert await shared.get() == 1  # the read behind it fails (and is logged)
    for _ in range(10):  # let the failed read end
        await asyncio.sleep(0)
    assert await shared.get() == 1  # still within stale_for: the last good value
    assert await shared.get(fresh=0.0) == 3
