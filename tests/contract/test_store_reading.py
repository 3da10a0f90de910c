"""Reading: run logs, get_run, list_runs filters and keyset pagination."""

from __future__ import annotations

import json
from typing import Any

from rota.domain.runs import LogLine, RunFilter
from rota.domain.states import RunState
from rota.store.port import Store

from .support import T0, at, claim_one, enqueue_one, new_run, state_of, succeeded


async def test_logs_round_trip_in_order(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    other_id = await enqueue_one(store, T0)
    lines = [
        LogLine(run_id, 1, at(1), "info", "starting", '{"step":1,"tags":["a","b"]}'),
        LogLine(other_id, 1, at(2), "debug", "someone else"),
        LogLine(run_id, 1, at(3), "warning", "slow: 3 s"),
        LogLine(run_id, 2, at(4), "error", "ünïcode ✓ and 'quotes'", '{"nested":{"x":null}}'),
    ]
    fences = {run_id: 0, other_id: 0}  # never claimed: the fence a run is made with
    assert await store.append_logs(lines[:2], fences) == 2
    assert await store.append_logs(lines[2:], fences) == 2
    assert await store.append_logs([], fences) == 0
    got = await store.logs(run_id)
    assert [(x.run_id, x.attempt, x.at, x.level, x.message) for x in got] == [
        (x.run_id, x.attempt, x.at, x.level, x.message) for x in lines if x.run_id == run_id
    ]
    # Field JSON may be re-serialised by the database; its meaning must survive.
    assert [json.loads(x.fields_json) for x in got] == [
        {"step": 1, "tags": ["a", "b"]},
        {},
        {"nested": {"x": None}},
    ]
    assert [x.message for x in await store.logs(other_id)] == ["someone else"]
    assert await store.logs(999_999) == []


async def test_attempts_of_a_run_without_history(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    assert await store.attempts(run_id) == []
    assert await store.attempts(999_999) == []


async def _mixed(store: Store) -> list[int]:
    """Five runs r1..r5 across handlers, queues and states (see comments)."""
    enqueued = await store.enqueue(
        [
            new_run(handler="a", queue="q1"),  # r1 pending
            new_run(handler="b", queue="q1", priority=10),  # r2 succeeded
            new_run(handler="a", queue="q2", priority=10),  # r3 claimed
            new_run(handler="b", queue="q2"),  # r4 pending
            new_run(handler="a", queue="q1"),  # r5 pending
        ],
        T0,
    )
    ids = [e.run_id for e in enqueued]
    r2 = await claim_one(store, T0, queues=["q1"])
    assert r2.run_id == ids[1]
    await store.complete([succeeded(r2)], at(1))
    r3 = await claim_one(store, T0, queues=["q2"])
    assert r3.run_id == ids[2]
    return ids


async def test_get_run_reflects_state(store: Store) -> None:
    r1, r2, r3, _, _ = await _mixed(store)
    states = [await state_of(store, run_id) for run_id in (r1, r2, r3)]
    assert states == [RunState.PENDING, RunState.SUCCEEDED, RunState.CLAIMED]


async def test_list_runs_filters(store: Store) -> None:
    r1, r2, r3, r4, r5 = await _mixed(store)

    async def listed(**filters: Any) -> list[int]:
        return [run.id for run in await store.list_runs(RunFilter(**filters))]

    assert await listed() == [r5, r4, r3, r2, r1]
    assert await listed(state=RunState.PENDING) == [r5, r4, r1]
    assert await listed(state=RunState.SUCCEEDED) == [r2]
    assert await listed(state=RunState.CLAIMED) == [r3]
    assert await listed(state=RunState.FAILED) == []
    assert await listed(handler="a") == [r5, r3, r1]
    assert await listed(handler="nobody") == []
    assert await listed(queue="q2") == [r4, r3]
    assert await listed(handler="a", queue="q1") == [r5, r1]
    assert await listed(state=RunState.PENDING, handler="b") == [r4]
    assert await listed(state=RunState.PENDING, handler="b", queue="q1") == []


async def test_list_runs_keyset_pagination_newest_first(store: Store) -> None:
    r1, r2, r3, r4, r5 = await _mixed(store)

    async def page(before_id: int | None, **filters: Any) -> list[int]:
        run_filter = RunFilter(before_id=before_id, limit=2, **filters)
        return [run.id for run in await store.list_runs(run_filter)]

    assert await page(None) == [r5, r4]
    assert await page(r4) == [r3, r2]
    assert await page(r2) == [r1]
    assert await page(r1) == []
    assert await page(None, handler="a") == [r5, r3]
    assert await page(r3, handler="a") == [r1]
    assert await page(r5, state=RunState.PENDING) == [r4, r1]


async def test_list_runs_returns_whole_runs(store: Store) -> None:
    _, r2, _, _, _ = await _mixed(store)
    [run] = await store.list_runs(RunFilter(state=RunState.SUCCEEDED))
    assert run == await store.get_run(r2)
    assert run.result == {"ok": True}


async def test_log_lines_are_stored_only_under_the_attempts_current_fence(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    first = await claim_one(store, T0, lease_seconds=5.0)
    assert first.run_id == run_id
    line = LogLine(run_id, first.attempt, at(1), "info", "first attempt")
    assert await store.append_logs([line], {run_id: first.fence}) == 1
    # The lease expires and another worker claims the run: the first worker's fence is
    # stale, and its lines are refused (the others in the same batch are kept).
    await store.reap_expired(at(10), poison_after=5, limit=10)
    second = await claim_one(store, at(60))
    assert second.run_id == run_id
    assert second.fence > first.fence
    other = await enqueue_one(store, T0, queue="other")
    stale = LogLine(run_id, first.attempt, at(61), "info", "from the stale worker")
    fresh = LogLine(run_id, second.attempt, at(62), "info", "second attempt")
    elsewhere = LogLine(other, 1, at(63), "info", "another run")
    stored = await store.append_logs(
        [stale, elsewhere], {run_id: first.fence, other: 0}
    ) + await store.append_logs([fresh], {run_id: second.fence})
    assert stored == 2
    assert [x.message for x in await store.logs(run_id)] == ["first attempt", "second attempt"]
    # Unknown runs store nothing.
    assert await store.append_logs([LogLine(999_999, 1, at(1), "info", "x")], {999_999: 0}) == 0


async def test_log_lines_after_a_seq_tail_the_log_in_order(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    other = await enqueue_one(store, T0)
    batch = [
        LogLine(run_id if n % 3 else other, 1, at(n), "info", f"line {n}") for n in range(1, 31)
    ]
    assert await store.append_logs(batch, {run_id: 0, other: 0}) == 30
    mine = [x.message for x in batch if x.run_id == run_id]
    everything = await store.logs(run_id)
    assert [x.message for x in everything] == mine  # one batch keeps its order
    seqs = [x.seq for x in everything]
    assert all(isinstance(s, int) for s in seqs)
    assert seqs == sorted(seqs)
    middle = everything[9].seq
    assert [x.message for x in await store.logs(run_id, after=middle)] == mine[10:]
    assert [x.message for x in await store.logs(run_id, after=middle, limit=3)] == mine[10:13]
    assert await store.logs(run_id, after=everything[-1].seq) == []
