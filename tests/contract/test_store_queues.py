"""Queues an operator pauses and resumes (ADR 0035), on both stores: claims skip a
paused queue (every process from its next claim: the claim statements read it), held runs
finish, the pause is a row that outlives the process, and resuming lets claims in."""

from __future__ import annotations

from rota.domain.limits import Limit, LimitScope
from rota.domain.states import RunState
from rota.store.port import ClaimRequest, Store
from tests.helpers import eventually

from .support import T0, at, enqueue_one, peers, state_of, succeeded


def _request(*queues: str, limit: int = 10) -> ClaimRequest:
    return ClaimRequest("w", queues or ("default",), limit, 30.0)


async def test_no_queue_is_paused_until_an_operator_pauses_one(store: Store) -> None:
    assert await store.list_queues() == []
    assert await store.paused_queues() == frozenset()


async def test_pausing_records_when_and_by_whom_and_a_second_pause_keeps_both(
    store: Store,
) -> None:
    first = await store.set_queue_paused("mail", True, "ana", T0)
    assert (first.name, first.paused, first.paused_at, first.paused_by) == ("mail", True, T0, "ana")
    again = await store.set_queue_paused("mail", True, "bo", at(5))
    assert (again.paused_at, again.paused_by) == (T0, "ana")
    resumed = await store.set_queue_paused("mail", False, None, at(9))
    assert (resumed.paused, resumed.paused_at, resumed.paused_by) == (False, None, None)
    assert [q.name for q in await store.list_queues()] == ["mail"]


async def test_a_claim_skips_a_paused_queue_and_takes_the_others(store: Store) -> None:
    mail = await enqueue_one(store, T0, queue="mail")
    other = await enqueue_one(store, T0, queue="default")
    await store.set_queue_paused("mail", True, "ana", T0)
    assert await store.paused_queues() == frozenset({"mail"})
    claimed = await store.claim(_request("mail", "default"), at(1))
    assert [c.run_id for c in claimed] == [other]
    assert await store.claim(_request("mail"), at(1)) == []
    assert await store.next_due_in(["mail"], at(1)) is None, "a paused queue wakes no one"
    await store.set_queue_paused("mail", False, None, at(2))
    assert [c.run_id for c in await store.claim(_request("mail"), at(3))] == [mail]


async def test_a_paused_queue_with_a_cap_is_skipped_by_the_limited_claim_too(
    store: Store,
) -> None:
    await store.set_limit(Limit(LimitScope.QUEUE, "mail", 5))
    await enqueue_one(store, T0, queue="mail")
    await store.set_queue_paused("mail", True, "ana", T0)
    assert await store.claim(_request("mail"), at(1)) == []


async def test_a_run_held_when_its_queue_is_paused_finishes(store: Store) -> None:
    run_id = await enqueue_one(store, T0, queue="mail")
    [held] = await store.claim(_request("mail"), at(1))
    await store.set_queue_paused("mail", True, "ana", at(2))
    assert await store.complete([succeeded(held)], at(3)) == {run_id}
    assert await state_of(store, run_id) is RunState.SUCCEEDED


async def test_another_process_claims_nothing_from_a_queue_paused_since_it_last_looked(
    store: Store,
) -> None:
    """The claim statements read the pause themselves: a process whose cached paused
    set is still empty takes nothing from a queue paused a moment ago, with the plain
    and the limited claim alike."""
    await enqueue_one(store, T0, queue="mail")
    await enqueue_one(store, T0, queue="capped")
    await store.set_limit(Limit(LimitScope.QUEUE, "capped", 5))
    async with peers(store, 1) as [peer]:
        assert await peer.claim(_request("other"), at(1)) == []  # reads its paused set
        assert await peer.paused_queues() == frozenset()
        await store.set_queue_paused("mail", True, "ana", T0)
        await store.set_queue_paused("capped", True, "ana", T0)
        assert await peer.paused_queues() == frozenset(), "its cached copy is stale ..."
        assert await peer.claim(_request("mail", "capped"), at(2)) == [], "... its claim is not"

        async def peer_sees_it() -> bool:
            return {"mail", "capped"} <= await peer.paused_queues()

        await eventually(peer_sees_it, what="the peer's cached set to catch up", timeout=5.0)


async def test_the_pause_outlives_the_store(store: Store) -> None:
    await store.set_queue_paused("mail", True, "ana", T0)
    async with peers(store, 1) as [fresh]:
        assert await fresh.paused_queues() == frozenset({"mail"})
        [control] = await fresh.list_queues()
        assert control.paused
        assert control.paused_by == "ana"
