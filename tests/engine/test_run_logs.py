"""A handler's log lines are stored with its run, stamped with the request's id."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import rota
from rota.context import RunLogger
from rota.domain.runs import ClaimedRun
from rota.domain.states import RunState
from rota.services import runs as run_service
from tests.engine.conftest import working
from tests.helpers import eventually
from tests.waiting import wait_for_state


async def test_log_lines_carry_the_correlation_id_of_the_request(make_app):
    app = make_app()

    @app.handler("report")
    async def report(ctx: rota.RunContext, payload: dict) -> None:
        ctx.log.info("building", rows=3)

    store = await app.store()
    run = run_service.new_run(
        app.registry, run_service.RunRequest("report", {}), correlation_id="req-123"
    )
    [run_id] = await run_service.enqueue(store, app.clock, [run])
    async with working(app):
        await wait_for_state(store, run_id, RunState.SUCCEEDED)
    [line] = await store.logs(run_id)
    assert line.message == "building"
    assert json.loads(line.fields_json) == {"correlation_id": "req-123", "rows": 3}
    assert (await store.get_run(run_id)).correlation_id == "req-123"


async def test_fields_named_like_the_loggers_own_parameters_are_stored(make_app):
    app = make_app()

    @app.handler("named")
    async def named(ctx: rota.RunContext, payload: dict) -> None:
        # Each of these names is also a parameter of the logger or a key the process
        # log sets itself: none may crash the handler.
        ctx.log.warning("x", attempt=7, message="m", run_id=1, handler="h", event="e", level=2)

    store = await app.store()
    [run_id] = await run_service.enqueue(
        store, app.clock, [run_service.new_run(app.registry, run_service.RunRequest("named", {}))]
    )
    async with working(app):
        run = await wait_for_state(store, run_id, RunState.SUCCEEDED, RunState.RETRYING)
    assert run.state is RunState.SUCCEEDED, run.error
    [line] = await store.logs(run_id)
    assert (line.level, line.message) == ("warning", "x")
    assert json.loads(line.fields_json) == {
        "attempt": 7,
        "message": "m",
        "run_id": 1,
        "handler": "h",
        "event": "e",
        "level": 2,
    }


async def test_a_running_attempts_lines_are_stored_while_it_runs_each_once(make_app):
    app = make_app()
    release = asyncio.Event()

    @app.handler("long")
    async def long(ctx: rota.RunContext, payload: dict) -> str:
        for n in range(3):
            ctx.log.info("before", n=n)
        await release.wait()
        ctx.log.info("after")
        return "done"

    @app.handler("sync_long")
    def sync_long(ctx: rota.RunContext, payload: dict) -> None:
        ctx.log.info("from a thread")
        ctx.cancelled.wait(20)  # until the test cancels it

    store = await app.store()
    [run_id, sync_id] = await run_service.enqueue(
        store,
        app.clock,
        [
            run_service.new_run(app.registry, run_service.RunRequest("long", {})),
            run_service.new_run(app.registry, run_service.RunRequest("sync_long", {})),
        ],
    )

    async def messages(of: int) -> list[str]:
        return [line.message for line in await store.logs(of)]

    async def lines_before_the_end() -> bool | None:
        return (await messages(run_id) == ["before"] * 3) or None

    async with working(app):
        await eventually(lines_before_the_end, 20.0, "the lines logged so far to be stored")
        assert not (await store.get_run(run_id)).state.is_terminal
        await eventually(
            lambda: _equal(messages(sync_id), ["from a thread"]), 20.0, "a thread's line"
        )
        release.set()
        await wait_for_state(store, run_id, RunState.SUCCEEDED)
        await run_service.cancel(store, app.clock, sync_id)
        await wait_for_state(store, sync_id, RunState.CANCELLED)
    lines = await store.logs(run_id)
    assert [line.message for line in lines] == ["before"] * 3 + ["after"]
    assert [json.loads(line.fields_json).get("n") for line in lines] == [0, 1, 2, None]
    assert await messages(sync_id) == ["from a thread"]


async def _equal(got: Any, wanted: list[str]) -> bool | None:
    return (await got == wanted) or None


async def test_a_run_that_logs_nothing_writes_no_log_statement(make_app, monkeypatch):
    app = make_app()

    @app.handler("quiet")
    async def quiet(ctx: rota.RunContext, payload: dict) -> None:
        return None

    store = await app.store()
    appended: list[int] = []
    real = store.append_logs

    async def counting(lines: Any, fences: Any) -> int:
        appended.append(len(lines))
        return await real(lines, fences)

    monkeypatch.setattr(store, "append_logs", counting)
    runs = [
        run_service.new_run(app.registry, run_service.RunRequest("quiet", {})) for _ in range(20)
    ]
    ids = await run_service.enqueue(store, app.clock, runs)
    async with working(app):
        for run_id in ids:
            await wait_for_state(store, run_id, RunState.SUCCEEDED)
    assert appended == []


def test_an_attempt_keeps_at_most_its_cap_and_counts_the_rest() -> None:
    claimed = _claimed()
    logger = RunLogger(claimed, lambda: datetime(2026, 3, 1, tzinfo=UTC), max_lines=3)
    for n in range(10):
        logger.info("line", n=n)
    live = logger.take()
    assert [line.message for line in live[:3]] == ["line"] * 3
    assert "log cap reached" in live[3].message
    assert live[3].level == "warning"
    assert len(live) == 4
    logger.info("still dropped")
    [last] = logger.take(final=True)
    assert last.message == "8 log lines dropped"
    assert json.loads(last.fields_json) == {"dropped": 8}


def test_the_byte_cap_counts_message_and_fields() -> None:
    claimed = _claimed()
    logger = RunLogger(claimed, lambda: datetime(2026, 3, 1, tzinfo=UTC), max_bytes=100)
    logger.info("a" * 60)  # 60 + len("{}")
    logger.info("b" * 60)  # over 100 bytes: dropped
    lines = logger.take(final=True)
    assert [line.message[:1] for line in lines] == ["a", "l", "1"]


def _claimed() -> ClaimedRun:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    return ClaimedRun(5, "h", {}, "q", 1, 3, 9, None, 0, None, at)
