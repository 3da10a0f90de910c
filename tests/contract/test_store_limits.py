"""Claim-time controls on both stores: tags, concurrency limits, deadlines."""

from __future__ import annotations

import asyncio

import pytest

from rota.domain.limits import Limit, LimitScope
from rota.domain.runs import ClaimedRun
from rota.domain.states import RunState
from rota.store.port import ClaimRequest, Store

from .support import (
    T0,
    at,
    bounded,
    claim,
    enqueue_one,
    lease_of,
    peers,
    retrying,
    state_of,
    succeeded,
)


def _request(limit: int = 10, tags: tuple[str, ...] = (), worker: str = "w") -> ClaimRequest:
    return ClaimRequest(worker, ("default",), limit, 30.0, tags)


# -- tags ----------------------------------------------------------------------
async def test_a_tagged_run_goes_only_to_a_worker_with_every_tag(store: Store) -> None:
    gpu = await enqueue_one(store, T0, tags=("gpu",))
    both = await enqueue_one(store, T0, tags=("gpu", "region-eu"))
    plain = await enqueue_one(store, T0)
    untagged = await store.claim(_request(), T0)
    assert [c.run_id for c in untagged] == [plain]
    gpu_only = await store.claim(_request(tags=("gpu",)), T0)
    assert [c.run_id for c in gpu_only] == [gpu]
    full = await store.claim(_request(tags=("region-eu", "gpu", "ssd")), T0)
    assert [c.run_id for c in full] == [both]


async def test_tags_round_trip(store: Store) -> None:
    run_id = await enqueue_one(store, T0, tags=("b", "a"))
    run = await store.get_run(run_id)
    assert run is not None
    assert run.tags == ("a", "b")


# -- concurrency keys ------------------------------------------------------------
async def test_a_key_limit_caps_running_runs_of_that_key(store: Store) -> None:
    for _ in range(5):
        await enqueue_one(store, T0, concurrency_key="customer-42", concurrency_limit=2)
    other = await enqueue_one(store, T0, concurrency_key="customer-7", concurrency_limit=2)
    first = await store.claim(_request(), T0)
    assert len([c for c in first if c.run_id != other]) == 2
    assert other in {c.run_id for c in first}
    assert await store.claim(_request(), T0) == []  # customer-42 is full
    done = next(c for c in first if c.run_id != other)
    await store.complete([succeeded(done)], T0)
    again = await store.claim(_request(), T0)
    assert len(again) == 1, "a slot freed, one more of customer-42 may run"


async def test_a_limited_claim_passes_over_a_full_key_to_the_next(store: Store) -> None:
    for _ in range(300):  # a hot key at the head of the queue
        await enqueue_one(store, T0, concurrency_key="hot", concurrency_limit=1)
    cold = await enqueue_one(store, at(1), concurrency_key="cold", concurrency_limit=1)
    claimed = await store.claim(_request(limit=5), at(2))
    assert len(claimed) == 2
    second = await store.claim(_request(limit=5), at(2))
    assert second == []
    assert cold in {c.run_id for c in claimed}


async def test_racing_claimers_never_exceed_a_key_limit(store: Store) -> None:
    for _ in range(40):
        await enqueue_one(store, T0, concurrency_key="k", concurrency_limit=3)
    async with peers(store, 8) as stores:
        results = await bounded(
            asyncio.gather(
                *(s.claim(_request(limit=5, worker=f"w{i}"), T0) for i, s in enumerate(stores))
            )
        )
    assert sum(len(r) for r in results) == 3


async def test_racing_claimers_keep_every_key_limit_while_runs_end(store: Store) -> None:
    """Many keys, racing claimers, and some held runs ending between rounds: what each
    key holds never passes its limit."""
    key_of: dict[int, str] = {}
    for i in range(60):
        key = f"k{i % 6}"
        key_of[await enqueue_one(store, T0, concurrency_key=key, concurrency_limit=2)] = key
    held: dict[int, ClaimedRun] = {}  # claimed and not yet ended
    ended = 0
    async with peers(store, 6) as stores:
        for _ in range(60):
            results = await bounded(
                asyncio.gather(
                    *(s.claim(_request(limit=4, worker=f"w{i}"), T0) for i, s in enumerate(stores))
                )
            )
            claimed = [c for taken in results for c in taken]
            assert len({c.run_id for c in claimed}) == len(claimed), "a run claimed twice"
            held.update((c.run_id, c) for c in claimed)
            per_key: dict[str, int] = {}
            for run_id in held:
                per_key[key_of[run_id]] = per_key.get(key_of[run_id], 0) + 1
            assert max(per_key.values(), default=0) <= 2, per_key
            # The oldest held run of each key ends: its key has room again.
            ending: dict[str, int] = {}
            for run_id in sorted(held):
                ending.setdefault(key_of[run_id], run_id)
            await store.complete([succeeded(held.pop(r)) for r in ending.values()], T0)
            ended += len(ending)
            if ended == 60:
                break
    assert ended == 60, "every run was claimed and ended"


# -- handler, queue and global limits ----------------------------------------
@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (Limit(LimitScope.HANDLER, "job", 2), 2),
        (Limit(LimitScope.QUEUE, "default", 3), 3),
        (Limit(LimitScope.GLOBAL, "*", 4), 4),
    ],
)
async def test_cluster_wide_caps(store: Store, limit: Limit, expected: int) -> None:
    for _ in range(10):
        await enqueue_one(store, T0)
    await store.set_limit(limit)
    async with peers(store, 4) as stores:
        results = await bounded(
            asyncio.gather(
                *(s.claim(_request(limit=10, worker=f"w{i}"), T0) for i, s in enumerate(stores))
            )
        )
    assert sum(len(r) for r in results) == expected
    assert await store.list_limits() == [limit]
    assert await store.clear_limit(limit.scope.value, limit.name)
    async with peers(store, 1) as (fresh,):  # a store whose limit cache is cold
        assert len(await fresh.claim(_request(limit=10), T0)) == 10 - expected


async def test_a_handler_limit_leaves_other_handlers_alone(store: Store) -> None:
    await store.set_limit(Limit(LimitScope.HANDLER, "single", 1))
    for _ in range(3):
        await enqueue_one(store, T0, handler="single")
        await enqueue_one(store, T0, handler="free")
    claimed = await store.claim(_request(limit=10), T0)
    handlers = sorted(c.handler for c in claimed)
    assert handlers == ["free", "free", "free", "single"]


# -- deadlines -----------------------------------------------------------------
async def test_a_run_past_its_deadline_is_never_claimed_and_gets_cancelled(store: Store) -> None:
    late = await enqueue_one(store, T0, deadline=at(10))
    on_time = await enqueue_one(store, T0, deadline=at(100))
    claimed = await claim(store, at(11), limit=10)
    assert [c.run_id for c in claimed] == [on_time]
    assert await store.expire_deadlines(at(11)) == [late]
    run = await store.get_run(late)
    assert run is not None
    assert run.state is RunState.CANCELLED
    assert run.error is not None
    assert run.error.startswith("deadline_exceeded")


async def test_a_deadline_binds_until_an_attempt_is_spent(store: Store) -> None:
    released = await enqueue_one(store, T0, deadline=at(10))
    retried = await enqueue_one(store, T0, deadline=at(10))
    first, second = await claim(store, at(5), limit=2)
    by_id = {first.run_id: first, second.run_id: second}
    # A release gives the attempt back: the run counts as never started again.
    await store.release([lease_of(by_id[released])], at(6))
    assert await state_of(store, released) is RunState.PENDING
    # A failed attempt was spent: its retry is not bound by the start-by deadline.
    await store.complete([retrying(by_id[retried], delay=1)], at(6))
    assert await store.expire_deadlines(at(20)) == [released]
    assert [c.run_id for c in await claim(store, at(20), limit=5)] == [retried]


async def test_expire_deadlines_is_a_leader_duty(store: Store) -> None:
    await enqueue_one(store, T0, deadline=at(1))
    assert await store.expire_deadlines(at(2), leader_term=5) == []
    assert await store.acquire_leadership("me", None, 30, at(2)) == 1
    assert len(await store.expire_deadlines(at(2), leader_term=1)) == 1
