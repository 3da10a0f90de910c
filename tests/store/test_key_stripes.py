"""Key-only limited claims on PostgreSQL (ADR 0040): they share the cluster lock, split
the 16 key stripes between them, and count and take runs of their own stripes only;
a claim with any other limit still waits for all of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from rota.domain.limits import SHARE_PROBE_EVERY
from rota.store.dialect import ClaimLockBusy, Session
from rota.store.port import ClaimRequest
from rota.store.postgres import PostgresStore
from tests.contract.support import T0, bounded, new_run


@pytest.fixture
async def store(pg_clean: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def _stripe_of(url: str, key: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT mod(hashtext(%s) & 2147483647, 16)", (key,)).fetchone()
    assert row is not None
    return int(row[0])


async def test_two_key_only_claims_hold_disjoint_stripes_at_once(store: PostgresStore) -> None:
    first_holds = asyncio.Event()
    second_done = asyncio.Event()
    held: dict[str, list[int]] = {}

    async def second(session: Session) -> None:
        held["second"] = list(session.key_stripes or [])

    async def first(session: Session) -> None:
        held["first"] = list(session.key_stripes or [])
        first_holds.set()
        # The second runs to its end while this one still holds its stripes.
        await bounded(second_done.wait())

    async def run_second() -> None:
        await first_holds.wait()
        await store._d.in_serialised(T0, second, 8)
        second_done.set()

    await bounded(asyncio.gather(store._d.in_serialised(T0, first, 8), run_second()))
    assert len(held["first"]) == len(held["second"]) == 8
    assert not set(held["first"]) & set(held["second"])


async def test_a_claim_with_other_limits_waits_for_key_only_ones(store: PostgresStore) -> None:
    holding = asyncio.Event()
    release = asyncio.Event()

    async def key_only(session: Session) -> None:
        holding.set()
        await bounded(release.wait())

    async def exclusive(session: Session) -> None:
        raise AssertionError("the cluster lock was taken beside a key-only claim")

    async def try_exclusive() -> None:
        await holding.wait()
        try:
            with pytest.raises(ClaimLockBusy):  # after the lock's 2 s wait
                await store._d.in_serialised(T0, exclusive)
        finally:
            release.set()

    await bounded(asyncio.gather(store._d.in_serialised(T0, key_only, 16), try_exclusive()))


async def test_a_key_only_claim_takes_runs_of_its_own_stripes_only(
    store: PostgresStore, pg_clean: str
) -> None:
    keys = [f"k{i}" for i in range(40)]
    stripe = {key: _stripe_of(pg_clean, key) for key in keys}
    await store.enqueue([new_run(concurrency_key=k, concurrency_limit=1) for k in keys], T0)
    # Another claimer holds half the stripes while this one claims.
    other_holds = asyncio.Event()
    claimed = asyncio.Event()
    others: list[int] = []

    async def hold(session: Session) -> None:
        others.extend(session.key_stripes or [])
        other_holds.set()
        await bounded(claimed.wait())

    async def claim() -> list[int]:
        await other_holds.wait()
        try:
            taken = await store.claim(ClaimRequest("w", ("default",), 40, 30.0, ()), T0)
        finally:
            claimed.set()
        return [c.run_id for c in taken]

    _, taken = await bounded(asyncio.gather(store._d.in_serialised(T0, hold, 8), claim()))
    runs = [await store.get_run(run_id) for run_id in taken]
    taken_keys = {run.concurrency_key for run in runs if run is not None}
    mine = {k for k in keys if stripe[k] not in others}
    assert taken_keys == mine  # every key of its own stripes, none of the other's
    # The other claimer let go. This one shares for a while (half the stripes a claim),
    # and its probe for every stripe comes within SHARE_PROBE_EVERY claims: the rest is
    # taken by then.
    rest = 0
    for _ in range(SHARE_PROBE_EVERY + 1):
        rest += len(await store.claim(ClaimRequest("w", ("default",), 40, 30.0, ()), T0))
    assert rest == len(keys) - len(taken)
