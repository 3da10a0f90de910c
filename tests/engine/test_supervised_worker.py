"""A worker's own loops survive errors nobody expected: they are logged, counted and
restarted, and the worker goes on working."""

from __future__ import annotations

import asyncio
from typing import Any

import rota
from rota.domain.states import RunState
from rota.engine.worker import Worker
from tests.faults import FaultyStore
from tests.waiting import wait_for_state


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
        await wait_for_state(store, run_id, RunState.SUCCEEDED, what="the run to succeed")
        assert worker.restarts.of("claims") == 1
    finally:
        stop.set()
        await asyncio.wait_for(working, 30)
