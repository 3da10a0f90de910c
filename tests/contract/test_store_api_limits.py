"""The HTTP API's limits held in the database (ADR 0036): one fixed window per key,
counted by one atomic upsert, read without spending by the blocked check, pruned once
ended. Same behaviour on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from rota.store.port import Store

from .support import at, bounded, peers


async def test_hits_count_in_one_window_from_the_first(store: Store) -> None:
    limits = store.api_limits
    first = await limits.spend_api_window("rate:jwt:alice", 60.0, at(0))
    assert (first.count, first.seconds_left) == (1, 60.0)
    second = await limits.spend_api_window("rate:jwt:alice", 60.0, at(15))
    assert (second.count, second.seconds_left) == (2, 45.0)
    other = await limits.spend_api_window("rate:jwt:bob", 60.0, at(15))
    assert other.count == 1
    assert second.wait(1) == 45.0
    assert second.wait(2) is None


async def test_an_ended_window_starts_again_at_the_next_hit(store: Store) -> None:
    limits = store.api_limits
    for seconds in range(3):
        await limits.spend_api_window("k", 60.0, at(seconds))
    again = await limits.spend_api_window("k", 60.0, at(60))
    assert (again.count, again.seconds_left) == (1, 60.0)
    later = await limits.spend_api_window("k", 60.0, at(70))
    assert (later.count, later.seconds_left) == (2, 50.0)


async def test_the_blocked_check_reads_without_spending(store: Store) -> None:
    limits = store.api_limits
    keys = ["auth:source:192.0.2.1", "auth:credential:jwt:alice"]
    assert await limits.full_api_windows(keys, 2, at(0)) is None
    await limits.spend_api_window(keys[0], 300.0, at(0))
    assert await limits.full_api_windows(keys, 2, at(1)) is None
    await limits.spend_api_window(keys[0], 300.0, at(10))
    await limits.spend_api_window(keys[1], 300.0, at(20))
    await limits.spend_api_window(keys[1], 300.0, at(20))
    # both are full: the one that ends last decides
    assert await limits.full_api_windows(keys, 2, at(100)) == 220.0
    assert await limits.full_api_windows(keys, 2, at(100)) == 220.0  # nothing spent
    assert await limits.full_api_windows(keys[:1], 2, at(299)) == 1.0
    assert await limits.full_api_windows(keys[:1], 2, at(300)) is None
    assert await limits.full_api_windows([], 2, at(0)) is None


async def test_pruning_deletes_only_ended_windows(store: Store) -> None:
    limits = store.api_limits
    await limits.spend_api_window("short", 10.0, at(0))
    await limits.spend_api_window("long", 100.0, at(0))
    assert await limits.prune_api_windows(at(9), 100) == 0
    assert await limits.prune_api_windows(at(10), 100) == 1
    assert await limits.full_api_windows(["long"], 1, at(10)) == 90.0
    fresh = await limits.spend_api_window("short", 10.0, at(11))
    assert fresh.count == 1


async def test_concurrent_hits_from_many_connections_are_each_counted(store: Store) -> None:
    """The upsert is atomic: hits from several store connections (as from several
    server processes) never lose a count, and the counts handed out are 1..n."""
    async with peers(store, 4) as stores:
        spends = [
            peer.api_limits.spend_api_window("shared", 300.0, at(0))
            for peer in stores
            for _ in range(10)
        ]
        counts = await bounded(asyncio.gather(*spends))
    assert sorted(c.count for c in counts) == list(range(1, 41))
