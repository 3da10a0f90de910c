"""Claim: what a claim writes, limits, queues, priority with aging, and exclusivity
under real contention (separate connections, and for SQLite separate threads)."""

from __future__ import annotations

import asyncio
import json

import pytest

from rota.domain.runs import RunFilter
from rota.domain.states import RunState
from rota.store.port import Store

from .support import (
    LEASE_SECONDS,
    T0,
    at,
    bounded,
    claim,
    claim_one,
    claim_request,
    enqueue_one,
    new_run,
    peers,
)

pytestmark = pytest.mark.timeout(60)


async def test_claim_takes_the_lease(store: Store) -> None:
    run_id = await enqueue_one(
        store,
        T0,
        handler="resize",
        payload='{"w":3}',
        max_attempts=4,
        timeout=9.0,
        idempotency_key="img-1",
    )
    claimed = await claim_one(store, at(10), worker_id="worker-a", lease_seconds=45.0)
    assert claimed.run_id == run_id
    assert (claimed.handler, claimed.payload, claimed.queue) == ("resize", {"w": 3}, "default")
    assert (claimed.attempt, claimed.max_attempts, claimed.fence) == (1, 4, 1)
    assert claimed.timeout == 9.0
    assert claimed.lost_count == 0
    assert claimed.idempotency_key == "img-1"
    assert claimed.lease_expires_at == at(55)

    run = await store.get_run(run_id)
    assert run is not None
    assert run.state is RunState.CLAIMED
    assert (run.attempt, run.fence) == (1, 1)
    assert run.worker_id == "worker-a"
    assert run.lease_expires_at == at(55)
    assert run.started_at == at(10)
    assert run.finished_at is None


async def test_a_claimed_run_is_not_claimed_again(store: Store) -> None:
    await enqueue_one(store, T0)
    await claim_one(store, T0)
    assert await claim(store, at(1), limit=10) == []


async def test_empty_store_claims_nothing(store: Store) -> None:
    assert await claim(store, T0, limit=5) == []


async def test_claim_respects_limit(store: Store) -> None:
    await store.enqueue([new_run(payload=json.dumps({"i": i})) for i in range(5)], T0)
    first = await claim(store, T0, limit=3)
    assert len(first) == 3
    second = await claim(store, T0, limit=3)
    assert len(second) == 2
    assert not {c.run_id for c in first} & {c.run_id for c in second}
    assert await claim(store, T0, limit=3) == []


async def test_claim_takes_only_the_listed_queues(store: Store) -> None:
    enqueued = await store.enqueue(
        [new_run(queue="a"), new_run(queue="b"), new_run(queue="c"), new_run(queue="a")], T0
    )
    a1, b, c, a2 = (e.run_id for e in enqueued)
    assert await claim(store, T0, limit=10, queues=["nope"]) == []
    assert await claim(store, T0, limit=10, queues=[]) == []
    got = await claim(store, T0, limit=10, queues=["a", "c"])
    assert {x.run_id for x in got} == {a1, a2, c}
    assert {x.queue for x in got} == {"a", "c"}
    [only_b] = await claim(store, T0, limit=10, queues=["b", "a", "c"])
    assert only_b.run_id == b


async def test_a_queue_listed_twice_does_not_shrink_the_claim(store: Store) -> None:
    enqueued = await store.enqueue([new_run(), new_run(), new_run(queue="b")], T0)
    got = await claim(store, T0, limit=3, queues=["default", "b", "default"])
    assert sorted(c.run_id for c in got) == sorted(e.run_id for e in enqueued)


async def test_limit_and_priority_span_all_listed_queues(store: Store) -> None:
    enqueued = await store.enqueue(
        [new_run(queue="low", priority=1) for _ in range(3)]
        + [new_run(queue="high", priority=10) for _ in range(3)],
        T0,
    )
    low, high = [e.run_id for e in enqueued[:3]], [e.run_id for e in enqueued[3:]]
    first = await claim(store, T0, limit=4, queues=["low", "high"])
    assert sorted(c.run_id for c in first) == sorted([*high, low[0]])
    rest = await claim(store, T0, limit=4, queues=["low", "high"])
    assert sorted(c.run_id for c in rest) == low[1:]


async def test_higher_priority_first_among_same_run_at(store: Store) -> None:
    enqueued = await store.enqueue([new_run(priority=p, run_at=T0) for p in (3, 10, 1, 7, 5)], T0)
    by_priority = dict(zip((3, 10, 1, 7, 5), (e.run_id for e in enqueued), strict=True))
    order = [(await claim_one(store, at(1))).run_id for _ in range(5)]
    assert order == [by_priority[p] for p in (10, 7, 5, 3, 1)]


async def test_equal_priority_and_run_at_go_in_id_order(store: Store) -> None:
    enqueued = await store.enqueue([new_run(run_at=T0) for _ in range(4)], T0)
    order = [(await claim_one(store, T0)).run_id for _ in range(4)]
    assert order == [e.run_id for e in enqueued]


async def test_earlier_run_at_first_among_same_priority(store: Store) -> None:
    late = await enqueue_one(store, T0, run_at=at(5))
    early = await enqueue_one(store, T0, run_at=at(1))
    assert [(await claim_one(store, at(10))).run_id for _ in range(2)] == [early, late]


@pytest.mark.parametrize(
    ("wait", "winner"),
    [(-1, "high"), (+1, "low")],
    ids=["just-before-aging-catches-up", "just-after"],
)
async def test_aging_lets_an_old_low_priority_run_beat_a_fresh_high_one(
    store: Store, wait: int, winner: str
) -> None:
    aging = store.aging_seconds
    # sort_at = run_at - priority * aging: a priority-1 run waiting longer than
    # (10 - 1) * aging outranks a priority-10 run that just arrived.
    catch_up = (10 - 1) * aging
    low = await enqueue_one(store, T0, priority=1, run_at=T0)
    high = await enqueue_one(store, at(catch_up + wait), priority=10)
    first = await claim_one(store, at(catch_up + wait + 1))
    assert first.run_id == {"low": low, "high": high}[winner]


async def test_sixteen_concurrent_claimers_of_one_run_exactly_one_wins(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    async with peers(store, 16) as claimers:
        results = await bounded(
            asyncio.gather(
                *(
                    c.claim(claim_request(limit=1, worker_id=f"w{i}"), at(1))
                    for i, c in enumerate(claimers)
                )
            )
        )
    winners = [(i, got) for i, got in enumerate(results) if got]
    assert len(winners) == 1, results
    index, [claimed] = winners[0]
    assert (claimed.run_id, claimed.attempt, claimed.fence) == (run_id, 1, 1)
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.attempt, run.fence) == (RunState.CLAIMED, 1, 1)
    assert run.worker_id == f"w{index}"


async def test_concurrent_claimers_drain_many_runs_each_exactly_once(store: Store) -> None:
    count = 500
    enqueued = await store.enqueue(
        [new_run(payload=json.dumps({"i": i}), priority=1 + i % 10) for i in range(count)], T0
    )
    expected = {e.run_id for e in enqueued}

    async def drain(claimer: Store, worker_id: str) -> list[int]:
        got: list[int] = []
        while batch := await claimer.claim(claim_request(limit=7, worker_id=worker_id), at(1)):
            got.extend(c.run_id for c in batch)
            assert all((c.attempt, c.fence) == (1, 1) for c in batch)
        return got

    async with peers(store, 4) as claimers:
        per_claimer = await bounded(
            asyncio.gather(*(drain(c, f"w{i}") for i, c in enumerate(claimers)))
        )
    everything = [run_id for got in per_claimer for run_id in got]
    assert len(everything) == count  # nobody got a run twice ...
    assert set(everything) == expected  # ... and every run was handed out
    assert await claim(store, at(2), limit=10) == []
    runs = await store.list_runs(RunFilter(limit=count + 1))
    assert len(runs) == count
    assert all((r.state, r.attempt, r.fence) == (RunState.CLAIMED, 1, 1) for r in runs)


async def test_claim_holds_lease_seconds_from_now(store: Store) -> None:
    await enqueue_one(store, T0)
    claimed = await claim_one(store, at(100))
    assert claimed.lease_expires_at == at(100 + LEASE_SECONDS)


async def test_next_due_in_tells_an_idle_worker_when_to_look_again(store: Store) -> None:
    await enqueue_one(store, T0, run_at=at(30))
    await enqueue_one(store, T0, run_at=at(90), queue="other")
    await enqueue_one(store, T0)  # due already: not a reason to wake early
    assert await store.next_due_in(("default",), T0) == 30.0  # both stores (issue 25)
    assert await store.next_due_in(("nothing-here",), T0) is None


async def test_next_due_in_counts_a_run_that_fell_due_since_the_claim_looked(
    store: Store,
) -> None:
    """An empty claim looked just before the run fell due; asked just after, the run is
    due now (0 s), not forgotten until the next poll (issue 25). Older due runs (not
    ours to take, say) do not count, so an idle worker does not spin on them."""
    await enqueue_one(store, T0, run_at=at(30))
    assert await store.next_due_in(("default",), at(30.002)) is None
    assert await store.next_due_in(("default",), at(30.002), looked_ago=0.005) == 0.0
    assert await store.next_due_in(("default",), at(31), looked_ago=0.005) is None


async def test_a_worker_woken_for_a_keyed_run_claims_it_in_its_first_claim(
    store: Store,
) -> None:
    """Issue 25: an idle worker told a keyed run (a skip job's slot) falls due claims it
    beside the plain runs of the same instant, not in a second claim after them; the
    claim still takes no more than its limit."""
    plain = [await enqueue_one(store, T0, run_at=at(30)) for _ in range(2)]
    keyed = [
        await enqueue_one(store, T0, run_at=at(30), concurrency_key=f"k{i}", concurrency_limit=1)
        for i in range(2)
    ]
    # Asked just after the runs fell due (they count as due now), as an idle worker does.
    assert await store.next_due_in(("default",), at(30.002), looked_ago=0.01) == 0.0
    first = await claim(store, at(30.002), limit=10)
    assert sorted(c.run_id for c in first) == sorted(plain + keyed)


async def test_a_wake_up_claim_for_keyed_runs_keeps_to_its_limit(store: Store) -> None:
    for i in range(3):
        await enqueue_one(store, T0, run_at=at(30))
        await enqueue_one(store, T0, run_at=at(30), concurrency_key=f"k{i}", concurrency_limit=1)
    assert await store.next_due_in(("default",), at(30.002), looked_ago=0.01) == 0.0
    first = await claim(store, at(30.002), limit=2)
    assert len(first) == 2
    rest = await claim(store, at(30.002), limit=10)
    assert len(first) + len(rest) <= 6
    assert not {c.run_id for c in first} & {c.run_id for c in rest}
