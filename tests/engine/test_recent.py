"""Recent: settings read at most once a ttl, refreshed in the background, never older
than STALE_LIMIT ttls, and a forgotten value never comes back from an older read."""

from __future__ import annotations

import asyncio

import pytest

from rota.errors import StoreUnavailable
from rota.store.core.recent import STALE_LIMIT, Recent


class Source:
    """What the database holds, and how often it was read; ``gate`` holds reads."""

    def __init__(self) -> None:
        self.value = "v1"
        self.reads = 0
        self.fail = False
        self.gate = asyncio.Event()
        self.gate.set()

    async def load(self) -> str:
        self.reads += 1
        value = self.value
        await self.gate.wait()
        if self.fail:
            raise StoreUnavailable("down")
        return value


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def settle(recent: Recent[str]) -> None:
    """Let a background refresh, if one was started, finish."""
    refresh = recent._refresh
    if refresh is not None:
        await asyncio.wait_for(refresh, 5)


@pytest.fixture
def source() -> Source:
    return Source()


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def test_read_once_per_ttl(source: Source, clock: Clock) -> None:
    recent = Recent(source.load, ttl=1.0, monotonic=clock)
    assert await recent.get() == "v1"
    clock.now += 0.9
    assert await recent.get() == "v1"
    assert source.reads == 1


async def test_an_old_value_is_handed_out_while_a_fresh_one_is_read(
    source: Source, clock: Clock
) -> None:
    recent = Recent(source.load, ttl=1.0, monotonic=clock)
    await recent.get()
    source.value = "v2"
    source.gate.clear()  # the background read waits: the caller must not
    clock.now += 1.5
    assert await asyncio.wait_for(recent.get(), 1) == "v1"
    assert await asyncio.wait_for(recent.get(), 1) == "v1"  # one refresh at a time
    assert source.reads == 2
    source.gate.set()
    await settle(recent)
    assert await recent.get() == "v2"


async def test_forget_reads_at_once_and_an_earlier_read_is_not_kept(
    source: Source, clock: Clock
) -> None:
    recent = Recent(source.load, ttl=1.0, monotonic=clock)
    await recent.get()
    source.gate.clear()
    clock.now += 1.5
    await recent.get()  # starts a background read of "v1"
    source.value = "v2"
    recent.forget()  # this process wrote v2
    source.gate.set()
    assert await recent.get() == "v2"
    await settle(recent)  # the older read ends after forget(): it must not win
    assert await recent.get() == "v2"


async def test_a_value_past_the_stale_limit_is_read_first(source: Source, clock: Clock) -> None:
    recent = Recent(source.load, ttl=1.0, monotonic=clock)
    await recent.get()
    source.value = "v2"
    clock.now += STALE_LIMIT + 0.1
    assert await recent.get() == "v2"


async def test_a_failed_refresh_keeps_the_old_value_then_tries_again(
    source: Source, clock: Clock
) -> None:
    recent = Recent(source.load, ttl=1.0, monotonic=clock)
    await recent.get()
    source.fail = True
    clock.now += 1.5
    assert await recent.get() == "v1"
    await settle(recent)
    assert await recent.get() == "v1"
    await settle(recent)
    source.fail = False
    source.value = "v2"
    assert await recent.get() == "v1"
    await settle(recent)
    assert await recent.get() == "v2"
    clock.now += STALE_LIMIT + 1
    source.fail = True
    with pytest.raises(StoreUnavailable):
        await recent.get()  # too old to hand out: the caller learns the store is down


async def test_close_stops_a_background_read(source: Source, clock: Clock) -> None:
    recent = Recent(source.load, ttl=1.0, monotonic=clock)
    await recent.get()
    source.gate.clear()
    clock.now += 1.5
    await recent.get()
    refresh = recent._refresh
    assert refresh is not None
    await asyncio.wait_for(recent.close(), 5)
    assert refresh.cancelled()
