"""The worker registry on both stores: register, heartbeat, drain, dead-node detection."""

from __future__ import annotations

import asyncio

from rota.domain.workers import WorkerInfo, WorkerState
from rota.store.port import Store

from .support import T0, at, claim, enqueue_one


def _worker(node_id: str, tags: tuple[str, ...] = ()) -> WorkerInfo:
    return WorkerInfo(node_id, "host-a", 123, "0.1.0", ("default",), tags, 8)


async def test_register_list_heartbeat_and_deregister(store: Store) -> None:
    await store.register_worker(_worker("w1", ("gpu",)), T0)
    await store.register_worker(_worker("w2"), T0)
    assert await store.worker_heartbeat("w1", at(5)) is WorkerState.ACTIVE
    workers = {w.node_id: w for w in await store.list_workers()}
    assert set(workers) == {"w1", "w2"}
    assert workers["w1"].tags == ("gpu",)
    assert workers["w1"].queues == ("default",)
    assert workers["w1"].heartbeat_age(at(6)) == 1.0
    await store.deregister_worker("w2")
    assert [w.node_id for w in await store.list_workers()] == ["w1"]
    assert await store.worker_heartbeat("w2", at(7)) is None


async def test_drain_is_seen_on_the_next_heartbeat(store: Store) -> None:
    await store.register_worker(_worker("w1"), T0)
    assert await store.set_worker_state("w1", WorkerState.DRAINING)
    assert await store.worker_heartbeat("w1", at(1)) is WorkerState.DRAINING
    assert await store.set_worker_state("w1", WorkerState.ACTIVE)
    assert await store.worker_heartbeat("w1", at(2)) is WorkerState.ACTIVE
    assert not await store.set_worker_state("nobody", WorkerState.DRAINING)


async def test_a_silent_worker_is_declared_dead_and_its_runs_come_back_at_once(
    store: Store,
) -> None:
    await store.register_worker(_worker("w1"), T0)
    await store.register_worker(_worker("w2"), T0)
    run_id = await enqueue_one(store, T0)
    [claimed] = await claim(store, T0, worker_id="w1", lease_seconds=300)
    await store.worker_heartbeat("w2", at(9))
    assert await store.mark_dead_workers(5.0, at(10)) == ["w1"]
    # Long before the 300 s lease would run out, the reaper takes the run back.
    reaped = await store.reap_expired(at(10), poison_after=3, limit=10)
    assert [r.run_id for r in reaped] == [run_id]
    assert claimed.fence == reaped[0].fence
    states = {w.node_id: w.state for w in await store.list_workers()}
    assert states == {"w1": WorkerState.DEAD, "w2": WorkerState.ACTIVE}
    # A "dead" worker that was only paused comes back as active when it beats again.
    assert await store.worker_heartbeat("w1", at(11)) is WorkerState.ACTIVE


async def test_dead_node_detection_is_a_leader_duty(store: Store) -> None:
    await store.register_worker(_worker("w1"), T0)
    assert await store.mark_dead_workers(5.0, at(10), leader_term=3) == []
    assert await store.acquire_leadership("leader", None, 30, at(10)) == 1
    assert await store.mark_dead_workers(5.0, at(10), leader_term=1) == ["w1"]


async def test_dead_workers_are_pruned(store: Store) -> None:
    await store.register_worker(_worker("w1"), T0)
    await store.mark_dead_workers(1.0, at(5))
    assert await store.prune_workers(at(4)) == 1
    assert await store.list_workers() == []


async def test_runs_needing_tags_no_live_worker_has_are_reported(store: Store) -> None:
    await store.register_worker(_worker("plain"), T0)
    await store.register_worker(_worker("gpu-box", ("gpu",)), T0)
    servable = await enqueue_one(store, T0, tags=("gpu",))
    stranded = await enqueue_one(store, T0, tags=("tpu",))
    reported = await store.unclaimable_runs(at(1), 10)
    assert [(r.run_id, r.tags) for r in reported] == [(stranded, ("tpu",))]
    assert servable != stranded


async def test_vacuum_runs_on_a_busy_table(store: Store) -> None:
    for _ in range(20):
        await enqueue_one(store, T0)
    await claim(store, T0, limit=20)
    await store.vacuum()  # must not fail inside the store's own connection handling
    assert len(await store.list_workers()) == 0


async def test_sqlite_vacuum_waits_for_another_writer_instead_of_failing(sqlite_url: str) -> None:
    """PRAGMA optimize reads the statistics and then writes them: in autocommit, with
    another process writing, SQLite refused that write at once ("database is locked",
    no busy wait), so under a steady drain the leader's vacuum kept failing. It must
    wait for the writer lock like any write."""
    import sqlite3

    from rota.store.sqlite import SqliteStore

    store = SqliteStore(sqlite_url)
    await store.open()
    await store.migrate()
    other = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        for _ in range(50):
            await enqueue_one(store, T0)
        await claim(store, T0, limit=20)  # the claim's query marks its tables for optimize
        other.execute("BEGIN IMMEDIATE")
        other.execute("CREATE TABLE test_writer_held (x INTEGER)")
        vacuum = asyncio.create_task(store.vacuum())
        # Still held: the vacuum waits for the writer lock (it has not failed at once).
        done, _ = await asyncio.wait({vacuum}, timeout=0.3)
        assert not done, vacuum.exception() if done else None
        other.execute("COMMIT")
        await asyncio.wait_for(vacuum, 10)  # then runs once the other writer commits
    finally:
        other.close()  # a failed check must not leave the lock held for store.close
        await store.close()
