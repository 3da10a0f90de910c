"""A worker's own loops survive errors nobody expected: they are logged, counted and
restarted, and the worker goes on working."""

from __future__ import annotations

import asyncio
from typing import Any

import rota
from rota.domain.states import RunState
from rota.worker import Worker
from tests.faults import FaultyStore
from tests.helpers import eventually


async def _succeeded(store: Any, run_id: int) -> bool:
    run = await store.get_run(run_id)
    return run is not None and run.state is RunState.SUCCEEDED


async def test_a_claim_loop_that_fails_unexpectedly_is_restarted(make_app):
    app = make_app()

    @app.handler("noop")
    async def noop(ctx: rota.RunContext, payload: Any) -> str:
        return "ok"

    store = await app.store()
    faulty = FaultyStore(store)
    faulty.fail("claim", times=1, error=RuntimeError)  # a bug, not a store failure
    options = app.worker_options(concurrency=2, node_id="w1")
    worker = Worker(faulty, app.registry, app.settings, app.clock, options)  # type: ignore[arg-type]
    stop = asyncio.Event()
    working = asyncio.create_task(worker.run(stop))
    try:
        run_id = await app.enqueue_async("noop", {})
        await eventually(lambda: _succeeded(store, run_id), what="the run to succeed")
        assert worker.restarts.of("claims") == 1
    finally:
        stop.set()
        await asyncio.wait_for(working, 30)
