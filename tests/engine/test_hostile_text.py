"""Text a handler produces but rota writes (its exception message, its log lines) may
hold anything: a NUL byte from binary input, an unpaired surrogate, a NaN field. None of
it may fail the write, which on PostgreSQL carried the outcomes and log lines of other
runs and stopped the worker (issue 8: one bad run must not stop the others)."""

from __future__ import annotations

import json

import rota
from rota.domain.states import RunState
from tests.engine.conftest import working
from tests.helpers import eventually


async def test_nul_and_nan_from_a_handler_are_stored_not_fatal(make_app):
    app = make_app()

    @app.handler("hostile", max_attempts=1)
    async def hostile(ctx: rota.RunContext, payload: object) -> None:
        ctx.log.info("read \x00 byte", raw="a\x00b", lone="\ud800", ratio=float("nan"))
        raise ValueError("bad byte \x00 and \udc80 in input")

    @app.handler("fine")
    async def fine(ctx: rota.RunContext, payload: object) -> str:
        ctx.log.info("all good")
        return "ok"

    store = await app.store()
    bad = await app.enqueue_async("hostile", None)
    good = [await app.enqueue_async("fine", n) for n in range(3)]
    async with working(app):

        async def finished():
            runs = [await store.get_run(run_id) for run_id in (bad, *good)]
            return all(run.state.is_terminal for run in runs)

        await eventually(finished, what="every run finished")

    failed = await store.get_run(bad)
    assert failed.state is RunState.DEAD_LETTERED
    assert "bad byte \ufffd and \\udc80 in input" in failed.error
    [line] = await store.logs(bad)
    assert line.message == "read \ufffd byte"
    assert json.loads(line.fields_json) == {"raw": "a\ufffdb", "lone": "\\ud800", "ratio": "nan"}
    for run_id in good:
        assert (await store.get_run(run_id)).state is RunState.SUCCEEDED
