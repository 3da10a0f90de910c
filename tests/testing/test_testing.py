"""rota.testing, as a user's test suite would use it: the rota_app fixture (from the
pytest11 plugin), drain, call, assert_enqueued and the FakeClock moving schedules."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import rota
from rota.domain.states import RunState
from rota.errors import DrainLimitReached, NotEnqueued
from rota.testing import (
    assert_enqueued,
    assert_not_enqueued,
    call,
    call_async,
    drain,
    enqueued,
    isolated_app,
)

pytestmark = pytest.mark.timeout(30)


def add_handlers(app: rota.App) -> None:
    @app.handler("send-report")
    def send_report(ctx: rota.RunContext, payload: dict[str, Any]) -> dict[str, Any]:
        ctx.log.info("sending")
        app.enqueue("notify", {"day": payload["day"]})
        return {"sent": payload["day"]}

    @app.handler("notify")
    async def notify(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
        return f"told {payload['day']}"

    @app.handler("flaky", max_attempts=2, retry=rota.retry.Fixed(60))
    def flaky(ctx: rota.RunContext, payload: Any) -> None:
        raise RuntimeError(f"attempt {ctx.attempt} broke")


def test_drain_runs_every_due_run_and_what_they_enqueue(rota_app: rota.App):
    add_handlers(rota_app)
    run_id = rota_app.enqueue("send-report", {"day": "2026-01-01"})
    drained = drain(rota_app)
    assert [(d.handler, d.state, d.result) for d in drained] == [
        ("send-report", RunState.SUCCEEDED, {"sent": "2026-01-01"}),
        ("notify", RunState.SUCCEEDED, "told 2026-01-01"),
    ]
    assert drained[0].run_id == run_id
    assert rota_app.get_run(run_id).state is RunState.SUCCEEDED
    assert [line.message for line in rota_app.run_detail(run_id).logs] == ["sending"]
    assert drain(rota_app) == []


def test_an_async_handler_may_call_the_apps_sync_methods(rota_app: rota.App):
    add_handlers(rota_app)

    @rota_app.handler("fan-out")
    async def fan_out(ctx: rota.RunContext, payload: Any) -> None:
        rota_app.enqueue("notify", {"day": "sync door"})  # blocks this loop, briefly

    rota_app.enqueue("fan-out")
    assert [d.handler for d in drain(rota_app)] == ["fan-out", "notify"]


def test_a_retry_waits_for_the_fake_clock(rota_app: rota.App, rota_clock: rota.FakeClock):
    add_handlers(rota_app)
    run_id = rota_app.enqueue("flaky")
    [first] = drain(rota_app)
    assert (first.state, first.error) == (RunState.RETRYING, "RuntimeError: attempt 1 broke")
    assert drain(rota_app) == []  # not due for 60 s of the fake clock
    rota_clock.advance(seconds=61)
    [second] = drain(rota_app)
    assert (second.attempt, second.state) == (2, RunState.DEAD_LETTERED)
    assert rota_app.get_run(run_id).state is RunState.DEAD_LETTERED


def test_moving_the_clock_runs_a_scheduled_slot(rota_app: rota.App, rota_clock: rota.FakeClock):
    add_handlers(rota_app)
    rota_app.schedule("hourly", handler="notify", payload={"day": "today"}, cron="0 * * * *")
    assert [d.handler for d in drain(rota_app)] == []
    rota_clock.advance(hours=1)
    assert [d.result for d in drain(rota_app)] == ["told today"]


def test_assert_enqueued_lists_what_was_enqueued_instead(rota_app: rota.App):
    add_handlers(rota_app)
    rota_app.enqueue("notify", {"day": "monday"})
    assert_enqueued(rota_app, "notify", {"day": "monday"})
    assert_enqueued(rota_app, "notify", count=1)
    assert_not_enqueued(rota_app, "send-report")
    with pytest.raises(NotEnqueued) as failure:
        assert_enqueued(rota_app, "notify", {"day": "tuesday"})
    message = str(failure.value)
    assert "expected a run of 'notify' with payload {'day': 'tuesday'}" in message
    assert "enqueued instead:\n  #1 notify {'day': 'monday'} (pending)" in message


def test_a_failure_says_when_nothing_was_enqueued(rota_app: rota.App, tmp_path: Path):
    add_handlers(rota_app)
    empty = isolated_app(f"sqlite:///{tmp_path / 'empty.db'}", handlers_from=rota_app)
    try:
        with pytest.raises(AssertionError, match=r"; nothing was enqueued$"):
            assert_enqueued(empty, "notify")
    finally:
        empty.close()


def test_call_runs_a_handler_inline_and_raises_what_it_raises(rota_app: rota.App):
    add_handlers(rota_app)
    assert call(rota_app, "notify", {"day": "friday"}) == "told friday"
    with pytest.raises(RuntimeError, match="attempt 1 broke"):
        call(rota_app, "flaky")
    assert enqueued(rota_app) == []  # nothing was a run


async def test_call_async_from_an_async_test(rota_app: rota.App):
    add_handlers(rota_app)
    assert await call_async(rota_app, "notify", {"day": "sunday"}) == "told sunday"
    with pytest.raises(rota.RotaError, match="call_async"):
        call(rota_app, "notify", {"day": "sunday"})


def test_drain_stops_a_handler_that_enqueues_itself(rota_app: rota.App):
    @rota_app.handler("again")
    def again(ctx: rota.RunContext, payload: Any) -> None:
        rota_app.enqueue("again")

    rota_app.enqueue("again")
    with pytest.raises(DrainLimitReached, match="drain ran 5 runs"):
        drain(rota_app, max_runs=5)


def test_the_ini_option_gives_the_fixture_an_apps_handlers(pytester: pytest.Pytester):
    pytester.makepyfile(
        tasks=textwrap.dedent(
            """
            import rota
            app = rota.App("sqlite:///never-opened.db")

            @app.handler("double")
            def double(ctx, payload):
                return payload * 2
            """
        ),
        test_user=textwrap.dedent(
            """
            from rota.testing import drain

            def test_user(rota_app):
                rota_app.enqueue("double", 21)
                assert [d.result for d in drain(rota_app)] == [42]
            """
        ),
    )
    pytester.makeini("[pytest]\nrota_app = tasks:app\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:django", "-q")
    result.assert_outcomes(passed=1)
    assert not Path(pytester.path / "never-opened.db").exists()


@pytest.mark.postgres
def test_drain_works_on_postgres_too(pg_clean: str):
    app = isolated_app(pg_clean, clock=rota.FakeClock())
    try:
        add_handlers(app)
        app.enqueue("send-report", {"day": "2026-02-02"})
        assert [d.handler for d in drain(app)] == ["send-report", "notify"]
        assert_enqueued(app, "notify", {"day": "2026-02-02"})
    finally:
        app.close()
