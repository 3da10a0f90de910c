"""Retries follow the handler's policy on the injected clock; then the dead-letter queue
and replay."""

from __future__ import annotations

from datetime import timedelta

import rota
from rota.domain.states import TERMINAL_STATES, AttemptOutcome, RunState
from tests.engine.conftest import working
from tests.waiting import wait_for_state


async def test_retry_delays_follow_the_policy_then_dead_letter_then_replay(make_app, clock):
    # The clock jumps 40 s below; the worker is alive, and must not be declared dead
    # because its registry beat (every 2 real seconds) had not caught up yet.
    app = make_app(clock, worker_dead_seconds=3600)
    failing = {"on": True}

    @app.handler("flaky", max_attempts=3, retry=rota.retry.Exponential(base=10, factor=3, cap=60))
    async def flaky(ctx: rota.RunContext, payload: dict) -> str:
        if failing["on"]:
            raise RuntimeError(f"attempt {ctx.attempt} broke")
        return "fine"

    store = await app.store()

    async with working(app):
        run_id = await app.enqueue_async("flaky", {"x": 1})
        run = await wait_for_state(store, run_id, RunState.RETRYING, attempt=1, what="attempt 1")
        assert run.run_at == clock.now() + timedelta(seconds=10)

        clock.advance(seconds=10)
        run = await wait_for_state(store, run_id, RunState.RETRYING, attempt=2, what="attempt 2")
        assert run.run_at == clock.now() + timedelta(seconds=30)

        clock.advance(seconds=30)
        run = await wait_for_state(
            store, run_id, RunState.DEAD_LETTERED, attempt=3, what="dead letter"
        )
        assert "attempt 3 broke" in run.error
        assert "no attempts left" in run.error
        attempts = await store.attempts(run_id)
        assert [a.outcome for a in attempts] == [AttemptOutcome.FAILED] * 3
        assert attempts[0].error == "RuntimeError: attempt 1 broke"

        failing["on"] = False
        replay_id = await store.replay(run_id, clock.db_now())
        assert await store.replay(run_id, clock.db_now()) == replay_id  # idempotent
        replayed = await wait_for_state(
            store, replay_id, RunState.SUCCEEDED, attempt=1, what="replay to succeed"
        )
        assert replayed.replay_of == run_id
        assert replayed.payload == {"x": 1}
        assert replayed.result == "fine"


async def test_permanent_failure_is_not_retried(make_app, clock):
    app = make_app(clock)

    @app.handler("bad-input", max_attempts=5)
    async def bad_input(ctx: rota.RunContext, payload: dict) -> None:
        raise rota.PermanentFailure("customer 42 does not exist")

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("bad-input", {})
        run = await wait_for_state(store, run_id, *TERMINAL_STATES, what="the run to end")
    assert run.state is RunState.FAILED
    assert run.attempt == 1
    assert "customer 42 does not exist" in run.error


async def test_unregistered_handler_on_this_worker_fails_visibly(make_app, clock):
    producer = make_app(clock)
    worker_app = make_app(clock)

    @producer.handler("elsewhere", max_attempts=1)
    async def elsewhere(ctx: rota.RunContext, payload: dict) -> None:
        return None

    @worker_app.handler("other")
    async def other(ctx: rota.RunContext, payload: dict) -> None:
        return None

    run_id = await producer.enqueue_async("elsewhere", {})
    store = await worker_app.store()
    async with working(worker_app):
        run = await wait_for_state(store, run_id, *TERMINAL_STATES, what="the run to end")
    assert run.state is RunState.DEAD_LETTERED
    assert "not registered on this worker" in run.error
