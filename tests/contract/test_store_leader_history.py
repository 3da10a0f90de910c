"""Leader history: every new term is recorded once, with its holder and start; a
renewal records nothing; the same on SQLite and PostgreSQL."""

from __future__ import annotations

from rota.store.port import LeaderTerm, Store

from .support import at


async def test_each_term_is_recorded_once_newest_first(store: Store) -> None:
    assert await store.leader_history(10) == []
    assert await store.acquire_leadership("node-a", None, 10, at(0)) == 1
    assert await store.acquire_leadership("node-a", 1, 10, at(5)) == 1  # a renewal
    assert await store.acquire_leadership("node-b", None, 10, at(8)) is None  # not expired
    assert await store.acquire_leadership("node-b", None, 10, at(20)) == 2  # a takeover
    await store.resign_leadership("node-b", 2, at(21))
    assert await store.acquire_leadership("node-a", None, 10, at(22)) == 3
    assert await store.leader_history(10) == [
        LeaderTerm(3, "node-a", at(22)),
        LeaderTerm(2, "node-b", at(20)),
        LeaderTerm(1, "node-a", at(0)),
    ]
    assert await store.leader_history(1) == [LeaderTerm(3, "node-a", at(22))]
