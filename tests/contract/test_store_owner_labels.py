"""A run's owner and labels (issue 29, ADR 0037): kept in both homes and by every
enqueue path, and the search filters on them and on priority."""

from __future__ import annotations

from rota.domain.search import RunSearch
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store
from rota.store.postgres import COPY_THRESHOLD

from .support import T0, at, claim_one, enqueue_one, finished, new_run

LABELS = (("env", "prod"), ("team.a/b-c", 'say "hi" = ok'))


async def test_owner_and_labels_are_kept_live_and_in_history(store: Store) -> None:
    run_id = await enqueue_one(store, T0, owner="billing", labels=dict(LABELS))
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.owner, run.labels) == ("billing", LABELS)
    claimed = await claim_one(store, at(1))
    await store.complete([finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    moved = await store.get_run(run_id)
    assert moved is not None
    assert moved.state is RunState.FAILED
    assert (moved.owner, moved.labels) == ("billing", LABELS)


async def test_a_run_without_them_has_none(store: Store) -> None:
    run = await store.get_run(await enqueue_one(store, T0))
    assert run is not None
    assert (run.owner, run.labels) == (None, ())


async def test_a_bulk_enqueue_keeps_them(store: Store) -> None:
    # COPY_THRESHOLD runs take PostgreSQL's COPY path; SQLite inserts them.
    template = new_run(owner="data", labels={"k": "v"})
    runs = [template.sibling({"i": i}) for i in range(COPY_THRESHOLD)]
    enqueued = await store.enqueue(runs, T0)
    for e in (enqueued[0], enqueued[-1]):
        run = await store.get_run(e.run_id)
        assert run is not None
        assert (run.owner, run.labels) == ("data", (("k", "v"),))


async def test_a_replay_keeps_them(store: Store) -> None:
    run_id = await enqueue_one(store, T0, owner="ops", labels={"a": "1"})
    claimed = await claim_one(store, at(1))
    await store.complete([finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    fresh = await store.get_run(await store.replay(run_id, at(3)))
    assert fresh is not None
    assert (fresh.owner, fresh.labels) == ("ops", (("a", "1"),))


async def _ids(store: Store, **filters: object) -> list[int]:
    return [run.id for run in await store.search_runs(RunSearch(**filters))]  # type: ignore[arg-type]


async def test_search_by_owner_labels_and_priority(store: Store) -> None:
    both = await enqueue_one(store, T0, owner="a", labels={"env": "prod", "tier": "1"})
    prod = await enqueue_one(store, T0, owner="b", labels={"env": "prod"}, priority=2)
    dev = await enqueue_one(store, T0, owner="a", labels={"env": "dev"}, priority=2)
    bare = await enqueue_one(store, T0)
    assert await _ids(store, owner="a") == [dev, both]
    assert await _ids(store, labels=(("env", "prod"),)) == [prod, both]
    # Every label given must match, key and value.
    assert await _ids(store, labels=(("env", "prod"), ("tier", "1"))) == [both]
    assert await _ids(store, labels=(("env", "prod"), ("tier", "2"))) == []
    assert await _ids(store, labels=(("tier", "prod"),)) == []
    assert await _ids(store, priority=2) == [dev, prod]
    assert await _ids(store, owner="a", priority=2) == [dev]
    assert await _ids(store) == [bare, dev, prod, both]


async def test_search_by_label_finds_finished_runs(store: Store) -> None:
    run_id = await enqueue_one(store, T0, labels={"k": "v"})
    claimed = await claim_one(store, at(1))
    await store.complete([finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    assert await _ids(store, labels=(("k", "v"),), states=(RunState.FAILED,)) == [run_id]
