"""A handler's log lines are stored with its run, stamped with the request's id."""

from __future__ import annotations

import json

import rota
from rota import services
from rota.domain.states import RunState
from tests.engine.conftest import working
from tests.waiting import wait_for_state


async def test_log_lines_carry_the_correlation_id_of_the_request(make_app):
    app = make_app()

    @app.handler("report")
    async def report(ctx: rota.RunContext, payload: dict) -> None:
        ctx.log.info("building", rows=3)

    store = await app.store()
    run = services.new_run(
        app.registry, services.RunRequest("report", {}), correlation_id="req-123"
    )
    [run_id] = await services.enqueue(store, app.clock, [run])
    async with working(app):
        await wait_for_state(store, run_id, RunState.SUCCEEDED)
    [line] = await store.logs(run_id)
    assert line.message == "building"
    assert json.loads(line.fields_json) == {"correlation_id": "req-123", "rows": 3}
    assert (await store.get_run(run_id)).correlation_id == "req-123"
