"""PostgreSQL: a handler's own writes commit atomically with its run's completion."""

from __future__ import annotations

import signal
from pathlib import Path

import psycopg
import pytest

import rota
from rota.domain.states import RunState
from tests.engine.conftest import side_effects, with_side_effects_table, working
from tests.helpers import WorkerProcesses, eventually, read_marks, wait_until
from tests.waiting import wait_for_state, wait_for_state_of

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_url(pg_clean: str) -> str:
    return with_side_effects_table(pg_clean)


async def test_write_and_completion_commit_together(make_app, db_url):
    app = make_app()

    @app.handler("write")
    async def write(ctx: rota.RunContext, payload: dict) -> str:
        conn = await ctx.transaction()
        await conn.execute("INSERT INTO side_effects VALUES (%s, %s)", (ctx.run_id, ctx.fence))
        return "written"

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("write", {})
        await wait_for_state(store, run_id, RunState.SUCCEEDED)
    assert side_effects(db_url) == [(run_id, 1)]


async def test_a_failing_handler_rolls_its_write_back(make_app, db_url):
    app = make_app()

    @app.handler("write-then-fail", max_attempts=1)
    async def write_then_fail(ctx: rota.RunContext, payload: dict) -> None:
        conn = await ctx.transaction()
        await conn.execute("INSERT INTO side_effects VALUES (%s, %s)", (ctx.run_id, ctx.fence))
        raise RuntimeError("changed my mind")

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("write-then-fail", {})
        await wait_for_state(store, run_id, RunState.DEAD_LETTERED)
    assert side_effects(db_url) == []


async def test_a_lost_fence_rolls_the_write_back(make_app, db_url):
    app = make_app()
    store = await app.store()

    @app.handler("write-after-takeover")
    async def write_after_takeover(ctx: rota.RunContext, payload: dict) -> None:
        conn = await ctx.transaction()
        await conn.execute("INSERT INTO side_effects VALUES (%s, %s)", (ctx.run_id, ctx.fence))
        # Meanwhile another worker takes the run over (what the reaper + a claim do).
        with psycopg.connect(db_url, autocommit=True) as other:
            other.execute("UPDATE rota_runs SET fence = fence + 1 WHERE id = %s", (ctx.run_id,))

    async with working(app):
        run_id = await app.enqueue_async("write-after-takeover", {})
        await eventually(
            lambda: _rejected(store, run_id), what="the stale completion to be rejected"
        )
    assert side_effects(db_url) == []
    run = await store.get_run(run_id)
    # Untouched by the stale worker: still held under the newer fence.
    assert (run.state, run.fence) == (RunState.CLAIMED, 2)


async def _rejected(store, run_id):
    run = await store.get_run(run_id)
    return run.fence == 2 and not await store.attempts(run_id)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_worker_killed_between_write_and_completion(
    db_url, process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    w1 = worker_processes.start("w1", lease_seconds=1.0)
    run_id = process_app.enqueue("tx-write", {"hang_first": True})
    wait_until(lambda: any(m[-1] == "wrote" for m in read_marks(marks)), what="the write")
    w1.send_signal(signal.SIGKILL)
    w1.wait(timeout=10)
    assert side_effects(db_url) == [], "an uncommitted write must not be visible"
    worker_processes.start("w2", lease_seconds=1.0)
    run = wait_for_state_of(
        process_app, run_id, RunState.SUCCEEDED, timeout=60, what="w2 to redo the run"
    )
    worker_processes.stop_all()
    assert run.fence == 2
    assert side_effects(db_url) == [(run_id, 2)], "exactly one write, by the new fence"


def test_enqueue_inside_the_callers_transaction(db_url):
    """A run enqueued on the caller's connection exists only if the caller commits."""
    app = rota.App(db_url)

    @app.handler("charge")
    async def charge(ctx: rota.RunContext, payload: dict) -> None:
        return None

    try:
        with psycopg.connect(db_url) as conn:
            rolled_back = app.enqueue("charge", {"order": 1}, connection=conn)
            conn.execute("INSERT INTO side_effects VALUES (%s, 0)", (rolled_back,))
            conn.rollback()
            committed = app.enqueue("charge", {"order": 2}, connection=conn)
            again = app.enqueue("charge", {"order": 2}, connection=conn, idempotency_key="o2")
            assert (
                app.enqueue("charge", {"order": 2}, connection=conn, idempotency_key="o2") == again
            )
            conn.commit()
        ids = {run.id for run in app.list_runs(limit=10)}
        assert rolled_back not in ids
        assert {committed, again} <= ids
        assert side_effects(db_url) == []
    finally:
        app.close()
