"""Hard timeouts and cooperative cancellation, for async and plain handlers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import rota
from rota.domain.states import AttemptOutcome, RunState
from tests.engine.conftest import working
from tests.helpers import eventually
from tests.waiting import wait_for_state


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_timeout_ends_the_attempt(make_app, kind):
    app = make_app()
    release = threading.Event()

    if kind == "async":

        @app.handler("stuck", timeout=0.2, retry_timeouts=False)
        async def stuck(ctx: rota.RunContext, payload: dict) -> None:
            await asyncio.sleep(3600)
    else:

        @app.handler("stuck", timeout=0.2, retry_timeouts=False)
        def stuck(ctx: rota.RunContext, payload: dict) -> None:
            release.wait(30)  # a thread cannot be killed; it is left to finish

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("stuck", {})
        run = await wait_for_state(store, run_id, RunState.TIMED_OUT)
        release.set()
    assert run.error == "timed out after 0.2 s"
    assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.TIMED_OUT]


@pytest.mark.parametrize("timeout", [None, 30.0])
async def test_a_handlers_own_timeout_error_is_a_failure_not_a_time_out(make_app, timeout):
    """A TimeoutError the handler raises (here its own wait_for) is its failure like any
    other: it is not the handler's time running out, with or without a timeout set."""
    app = make_app()

    @app.handler("waits-too-little", timeout=timeout, max_attempts=1)
    async def waits_too_little(ctx: rota.RunContext, payload: dict) -> None:
        await asyncio.wait_for(asyncio.Event().wait(), 0.01)

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("waits-too-little", {})
        run = await wait_for_state(store, run_id, RunState.DEAD_LETTERED)
    assert run.error is not None
    assert run.error.startswith("TimeoutError")
    assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.FAILED]


async def test_timeouts_are_retried_by_default(make_app):
    app = make_app()

    @app.handler("slow-then-fast", timeout=0.2, max_attempts=2, retry=rota.retry.Fixed(0))
    async def slow_then_fast(ctx: rota.RunContext, payload: dict) -> int:
        if ctx.attempt == 1:
            await asyncio.sleep(3600)
        return ctx.attempt

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("slow-then-fast", {})
        run = await wait_for_state(store, run_id, RunState.SUCCEEDED)
    assert run.result == 2
    outcomes = [a.outcome for a in await store.attempts(run_id)]
    assert outcomes == [AttemptOutcome.TIMED_OUT, AttemptOutcome.SUCCEEDED]


async def test_a_sync_handler_past_its_timeout_keeps_its_slot_until_it_returns(make_app):
    app = make_app()
    release = threading.Event()
    started = []

    @app.handler("stubborn", timeout=0.1, retry_timeouts=False)
    def stubborn(ctx: rota.RunContext, payload: dict) -> None:
        started.append(payload["n"])
        release.wait(30)

    store = await app.store()
    async with working(app, concurrency=1):
        first = await app.enqueue_async("stubborn", {"n": 1})
        second = await app.enqueue_async("stubborn", {"n": 2})
        await wait_for_state(store, first, RunState.TIMED_OUT)
        # The one slot is still held by the first thread: the second run waits.
        assert (await store.get_run(second)).state is RunState.PENDING
        assert started == [1]
        release.set()  # the first thread returns; the second run gets the slot
        await wait_for_state(store, second, RunState.SUCCEEDED)
    assert started == [1, 2]


@pytest.mark.parametrize(
    "kind", ["async-cooperative", "sync-cooperative", "sync-waiting", "async-ignoring"]
)
async def test_cancelling_a_running_run(make_app, kind):
    # A short lease makes the heartbeat, which carries cancel requests, come often.
    app = make_app(lease_seconds=0.3, cancel_grace_seconds=0.2)
    inside = threading.Event()

    if kind == "async-cooperative":

        @app.handler("long")
        async def long(ctx: rota.RunContext, payload: dict) -> str:
            inside.set()
            while not ctx.is_cancelled():
                await asyncio.sleep(0.01)
            return "stopped early"
    elif kind == "sync-cooperative":

        @app.handler("long")
        def long(ctx: rota.RunContext, payload: dict) -> str:
            inside.set()
            while not ctx.is_cancelled():
                time.sleep(0.01)
            return "stopped early"
    elif kind == "sync-waiting":

        @app.handler("long")
        def long(ctx: rota.RunContext, payload: dict) -> str:
            inside.set()
            ctx.cancelled.wait(30)  # blocks its thread until the cancel arrives
            return "stopped early"
    else:

        @app.handler("long")
        async def long(ctx: rota.RunContext, payload: dict) -> str:
            inside.set()
            await asyncio.sleep(3600)  # never looks at ctx: cancelled after the grace
            return "never"

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("long", {})
        await eventually(lambda: _as_async(inside.is_set()), what="the handler to start")
        run = await store.request_cancel(run_id, None)
        assert run.cancel_requested
        run = await wait_for_state(store, run_id, RunState.CANCELLED)
    assert run.error == "cancelled by request"
    assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.CANCELLED]


async def test_cancelling_a_pending_run_means_it_never_runs(make_app, clock):
    app = make_app(clock)
    calls = []

    @app.handler("later")
    async def later(ctx: rota.RunContext, payload: dict) -> None:
        calls.append(ctx.run_id)

    store = await app.store()
    from datetime import timedelta

    run_id = await app.enqueue_async("later", {}, run_at=clock.now() + timedelta(minutes=5))
    run = await store.request_cancel(run_id, clock.db_now())
    assert run.state is RunState.CANCELLED
    async with working(app):
        clock.advance(minutes=10)
        marker = await app.enqueue_async("later", {})
        await wait_for_state(store, marker, RunState.SUCCEEDED)
    assert calls == [marker]


async def test_graceful_shutdown_releases_unfinished_runs(make_app):
    app = make_app(shutdown_grace_seconds=0.2)
    inside = threading.Event()

    @app.handler("endless")
    async def endless(ctx: rota.RunContext, payload: dict) -> None:
        inside.set()
        await asyncio.sleep(3600)

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("endless", {})
        await eventually(lambda: _as_async(inside.is_set()), what="the handler to start")
    run = await store.get_run(run_id)
    assert run.state is RunState.PENDING
    assert run.attempt == 0, "a released attempt is not spent"
    assert [a.outcome for a in await store.attempts(run_id)] == [AttemptOutcome.RELEASED]


async def _as_async(value):
    return value
