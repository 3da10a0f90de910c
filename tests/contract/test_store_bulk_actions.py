"""Bulk actions on a filter (issue 29): the store's count and batch delete, and the walk
rota.services.bulk_actions makes over them, against both stores."""

from __future__ import annotations

import pytest

from rota.clock import FakeClock
from rota.domain.bulk_actions import BulkAction
from rota.domain.search import RunSearch
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.workflows import StepSpec, WorkflowDefinition
from rota.errors import CountChanged, InvalidArgument
from rota.services import bulk_actions
from rota.store.port import Store

from .support import (
    T0,
    at,
    claim,
    claim_one,
    enqueue_one,
    finished,
    new_run,
    state_of,
    succeeded,
)


async def _dead(store: Store, seconds: float, handler: str = "job") -> int:
    """A run of ``handler`` dead-lettered at T0 + seconds (one attempt recorded)."""
    run_id = await enqueue_one(store, at(seconds), handler=handler)
    claimed = await claim_one(store, at(seconds))
    assert claimed.run_id == run_id
    dead = finished(claimed, RunState.DEAD_LETTERED, AttemptOutcome.FAILED)
    assert await store.complete([dead], at(seconds)) == {run_id}
    return run_id


# -- the store -------------------------------------------------------------
async def test_the_count_is_what_the_search_lists_and_names_the_newest(store: Store) -> None:
    ids = [await enqueue_one(store, at(i), handler="a") for i in range(3)]
    await enqueue_one(store, at(3), handler="b")
    search = RunSearch(handler="a", states=(RunState.PENDING,))
    assert await store.bulk.count_matching_runs(search) == (3, ids[-1])
    listed = await store.search_runs(RunSearch(handler="a", limit=50))
    assert sorted(run.id for run in listed) == ids
    assert await store.bulk.count_matching_runs(RunSearch(handler="none")) == (0, None)
    # The keyset cursor and the limit are the walk's, not the count's.
    both = RunSearch(before_id=ids[0], limit=1)
    assert await store.bulk.count_matching_runs(both) == (4, ids[-1] + 1)


async def test_the_batch_delete_takes_finished_runs_only(store: Store) -> None:
    dead = await _dead(store, 0)
    live = await enqueue_one(store, at(1))
    assert await store.bulk.delete_finished_runs([dead, live, 999_999]) == 1
    assert await store.get_run(dead) is None
    assert await store.attempts(dead) == []
    assert await state_of(store, live) is RunState.PENDING
    assert await store.bulk.delete_finished_runs([]) == 0


async def test_a_workflows_step_is_never_deleted_alone(store: Store) -> None:
    definition = WorkflowDefinition("flow", (StepSpec("only", "job"),))
    await store.start_workflow_run(definition, "{}", [new_run(queue="wf")], T0)
    step = await claim_one(store, at(1), queues=["wf"])
    await store.complete([succeeded(step)], at(2))
    plain = await _dead(store, 3)
    assert await store.bulk.delete_finished_runs([step.run_id, plain]) == 1
    assert await state_of(store, step.run_id) is RunState.SUCCEEDED
    result = await bulk_actions.run_action(store, FakeClock(T0), BulkAction.DELETE, RunSearch(), 1)
    assert (result.matched, result.affected, result.skipped) == (1, 0, 1)  # the step: refused


# -- the walk ----------------------------------------------------------------
async def test_cancel_walks_every_matching_run_in_batches(store: Store) -> None:
    clock = FakeClock(T0)
    ids = [await enqueue_one(store, at(i), handler="a") for i in range(5)]
    other = await enqueue_one(store, at(9), handler="b")
    search = RunSearch(handler="a")
    preview = await bulk_actions.preview(store, BulkAction.CANCEL, search)
    assert (preview.count, preview.top_id) == (5, ids[-1])
    seen: list[tuple[int, int, int]] = []

    async def progress(done: int, affected: int, skipped: int) -> None:
        seen.append((done, affected, skipped))

    result = await bulk_actions.run_action(
        store, clock, BulkAction.CANCEL, search, 5, progress=progress, batch_size=2
    )
    assert (result.matched, result.affected, result.skipped, result.batches) == (5, 5, 0, 3)
    assert seen == [(2, 2, 0), (4, 4, 0), (5, 5, 0)]
    assert {await state_of(store, i) for i in ids} == {RunState.CANCELLED}
    assert await state_of(store, other) is RunState.PENDING


async def test_a_changed_count_does_nothing(store: Store) -> None:
    run_id = await enqueue_one(store, T0)
    with pytest.raises(CountChanged) as raised:
        await bulk_actions.run_action(store, FakeClock(T0), BulkAction.CANCEL, RunSearch(), 2)
    assert (raised.value.name, raised.value.value, raised.value.count) == ("expected_count", 2, 1)
    assert await state_of(store, run_id) is RunState.PENDING


async def test_a_state_the_action_cannot_touch_is_refused(store: Store) -> None:
    search = RunSearch(states=(RunState.SUCCEEDED,))
    with pytest.raises(InvalidArgument) as raised:
        await bulk_actions.preview(store, BulkAction.CANCEL, search)
    assert raised.value.name == "state"
    assert "pending" in raised.value.allowed


async def test_a_run_that_finishes_before_the_walk_reaches_it_is_skipped(store: Store) -> None:
    clock = FakeClock(T0)
    ids = [await enqueue_one(store, at(i)) for i in range(4)]

    async def finish_the_oldest(done: int, affected: int, skipped: int) -> None:
        if done == 2:  # the walk goes newest first: the oldest is still ahead of it
            claimed = await claim_one(store, at(10))
            assert claimed.run_id == ids[0]
            await store.complete([succeeded(claimed)], at(10))

    result = await bulk_actions.run_action(
        store, clock, BulkAction.CANCEL, RunSearch(), 4, progress=finish_the_oldest, batch_size=2
    )
    assert (result.matched, result.affected, result.skipped) == (4, 3, 1)
    assert await state_of(store, ids[0]) is RunState.SUCCEEDED


async def test_a_run_that_finishes_after_its_page_is_read_is_refused_and_skipped(
    store: Store,
) -> None:
    ids = [await enqueue_one(store, at(i)) for i in range(2)]
    read = store.search_runs

    async def read_then_finish(search: RunSearch):  # type: ignore[no-untyped-def]
        page = await read(search)
        for claimed in await claim(store, at(10), limit=1):
            await store.complete([succeeded(claimed)], at(10))
        return page

    store.search_runs = read_then_finish  # type: ignore[method-assign]
    result = await bulk_actions.run_action(store, FakeClock(T0), BulkAction.CANCEL, RunSearch(), 2)
    assert (result.matched, result.affected, result.skipped) == (2, 1, 1)
    assert await state_of(store, ids[0]) is RunState.SUCCEEDED
    assert await state_of(store, ids[1]) is RunState.CANCELLED


async def test_replay_makes_one_fresh_run_per_dead_letter_and_never_walks_them(
    store: Store,
) -> None:
    clock = FakeClock(T0)
    dead = [await _dead(store, i) for i in range(3)]
    await _dead(store, 5, handler="other")
    search = RunSearch(handler="job")
    result = await bulk_actions.run_action(store, clock, BulkAction.REPLAY, search, 3, batch_size=1)
    assert (result.matched, result.affected, result.skipped, result.batches) == (3, 3, 0, 3)
    fresh = await store.search_runs(RunSearch(handler="job", states=(RunState.PENDING,)))
    assert sorted(run.replay_of for run in fresh) == dead
    # Again: the same dead letters match, and each keeps its one fresh run.
    await bulk_actions.run_action(store, clock, BulkAction.REPLAY, search, 3)
    again = await store.search_runs(RunSearch(handler="job", states=(RunState.PENDING,)))
    assert len(again) == 3


async def test_requeue_takes_failed_runs_and_delete_takes_finished_ones(store: Store) -> None:
    clock = FakeClock(T0)
    dead = await _dead(store, 0)
    live = await enqueue_one(store, at(1))
    requeued = await bulk_actions.run_action(store, clock, BulkAction.REQUEUE, RunSearch(), 1)
    assert (requeued.affected, requeued.skipped) == (1, 0)
    preview = await bulk_actions.preview(store, BulkAction.DELETE, RunSearch())
    assert preview.count == 1
    deleted = await bulk_actions.run_action(store, clock, BulkAction.DELETE, RunSearch(), 1)
    assert (deleted.affected, deleted.skipped) == (1, 0)
    assert await store.get_run(dead) is None
    assert await state_of(store, live) is RunState.PENDING


async def test_a_job_that_is_not_there_matches_nothing(store: Store) -> None:
    await enqueue_one(store, T0)
    preview = await bulk_actions.preview(store, BulkAction.CANCEL, RunSearch(), ("default", "no"))
    assert (preview.count, preview.top_id) == (0, None)
    result = await bulk_actions.run_action(
        store, FakeClock(T0), BulkAction.CANCEL, RunSearch(), 0, ("default", "no")
    )
    assert (result.matched, result.affected, result.batches) == (0, 0, 0)


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ((), {"pending", "claimed", "succeeded"}),
        ((RunState.PENDING,), {"pending"}),
        ((RunState.SUCCEEDED,), {"succeeded"}),
        ((RunState.CLAIMED, RunState.SUCCEEDED), {"claimed", "succeeded"}),
        ((RunState.DEAD_LETTERED,), set()),
    ],
)
async def test_a_search_and_its_count_read_every_home_its_states_can_be_in(
    store: Store, states: tuple[RunState, ...], expected: set[str]
) -> None:
    """Live states are in the queue table, final ones in history (ADR 0027); a search
    reads only the homes its states can be in, and finds the same runs as through both."""
    await enqueue_one(store, T0)
    done = await claim_one(store, at(1))
    await store.complete([succeeded(done)], at(2))
    await enqueue_one(store, at(3))
    await claim_one(store, at(4))
    await enqueue_one(store, at(5))
    found = await store.search_runs(RunSearch(states=states, limit=10))
    assert {run.state.value for run in found} == expected
    assert len(found) == len(expected)
    count, top_id = await store.bulk.count_matching_runs(RunSearch(states=states))
    assert count == len(expected)
    assert top_id == (max(run.id for run in found) if found else None)
