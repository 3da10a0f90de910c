"""Rate limits on run starts, on both stores, with the store's clock injected."""

from __future__ import annotations

from rota.domain.rates import Rate, RateLimit, RateScope
from rota.store.port import ClaimRequest, Store

from .support import T0, at, enqueue_one, new_run


def _request(limit: int = 10, queues: tuple[str, ...] = ("default",)) -> ClaimRequest:
    return ClaimRequest("w", queues, limit, 30.0, ())


async def _ids(store: Store, seconds: float, limit: int = 10) -> list[int]:
    return [c.run_id for c in await store.claim(_request(limit), at(seconds))]


async def test_a_handler_rate_caps_starts_in_every_window(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(3, 60)))
    runs = [await enqueue_one(store, T0) for _ in range(5)]
    assert await _ids(store, 1) == runs[:3]
    assert await _ids(store, 30) == [], "3 started in the last minute"
    assert await _ids(store, 60.9) == [], "the window of the first start has not passed"
    assert await _ids(store, 61) == runs[3:5], "all three left the window at 61s"


async def test_rate_keys_have_their_own_budgets_and_unrated_work_passes(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(1, 1)))
    a1 = await enqueue_one(store, T0, rate_key="a")
    a2 = await enqueue_one(store, T0, rate_key="a")
    b1 = await enqueue_one(store, T0, rate_key="b")
    other = await enqueue_one(store, T0, handler="other")
    assert sorted(await _ids(store, 1)) == sorted([a1, b1, other])
    assert await _ids(store, 1.5) == []
    assert await _ids(store, 2) == [a2]


async def test_a_queue_rate_counts_every_handler_in_it(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.QUEUE, "mail", Rate(2, 1)))
    runs = [await enqueue_one(store, T0, handler=f"h{i}", queue="mail") for i in range(3)]
    claim = ClaimRequest("w", ("mail",), 10, 30.0, ())
    assert [c.run_id for c in await store.claim(claim, at(1))] == runs[:2]
    assert await store.claim(claim, at(1.2)) == []
    assert [c.run_id for c in await store.claim(claim, at(2))] == runs[2:]


async def test_rates_keep_priority_order(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(1, 1)))
    low = await enqueue_one(store, T0, priority=1)
    high = await enqueue_one(store, T0, priority=9)
    assert await _ids(store, 1) == [high]
    assert await _ids(store, 2) == [low]


async def test_a_rate_and_a_concurrency_limit_hold_together(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(10, 1)))
    for _ in range(4):
        await enqueue_one(store, T0, concurrency_key="k", concurrency_limit=2)
    assert len(await _ids(store, 1)) == 2, "the key's cap, not the rate, stops it"


async def test_rates_are_listed_replaced_and_cleared(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(3, 60)))
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(5, 1)))
    assert await store.list_rates() == [RateLimit(RateScope.HANDLER, "job", Rate(5, 1))]
    assert await store.clear_rate("handler", "job")
    assert not await store.clear_rate("handler", "job")
    runs = [await enqueue_one(store, T0) for _ in range(7)]
    assert sorted(await _ids(store, 1)) == runs, "no rate: nothing held back"


async def test_runs_of_a_full_key_ahead_do_not_hide_another_key(store: Store) -> None:
    """Later rounds of the limited claim skip what earlier ones passed over, so a key
    whose budget is spent hides the runs behind it only beyond what the rounds read
    (four windows), not beyond the first window read over and over."""
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(1, 60)))
    new = [new_run(rate_key="hot") for _ in range(450)]
    first = (await store.enqueue(new, T0))[0].run_id
    behind = await enqueue_one(store, T0, rate_key="cold")
    assert await _ids(store, 1, limit=1) == [first]
    assert await _ids(store, 2, limit=1) == [behind], "found past 449 runs of a full key"


async def test_a_claim_whose_instant_is_earlier_than_the_last_ones_keeps_the_rate(
    store: Store,
) -> None:
    """Claimers take the limits lock in turn, but each one's instant is its transaction's
    start, taken before it waited: a claim can come after one with a later instant. It
    must still count every start inside its window, including those the later instant
    already let go of."""
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(10, 1)))
    first = [await enqueue_one(store, T0) for _ in range(6)]
    assert await _ids(store, 0.2) == first  # 6 starts, in the window until 1.2 s
    later = [await enqueue_one(store, T0) for _ in range(4)]
    assert await _ids(store, 1.25) == later  # the window (0.25, 1.25] was empty
    [await enqueue_one(store, T0) for _ in range(6)]
    taken = await _ids(store, 1.1)  # the window (0.1, 1.1] holds the 6 of 0.2 s
    assert len(taken) <= 4, f"{len(taken)} started where 10 - 6 = 4 fit"
