"""An attempt the database failed is not the handler's failure: it is retried with its
attempt given back, and its history says so. A completion whose commit broke mid-way is
settled as soon as the database answers, not when the lease runs out."""

from __future__ import annotations

from typing import Any

import rota
from rota.domain.states import TERMINAL_STATES, AttemptOutcome, RunState
from rota.errors import StoreUnavailable
from tests.engine.conftest import working
from tests.waiting import wait_for_state

# Long enough that a run left to wait out its lease could not pass these tests.
LEASE = 120.0


async def _history(store, run_id: int) -> list[tuple[int, AttemptOutcome]]:
    return [(a.attempt, a.outcome) for a in await store.attempts(run_id)]


async def test_an_unreachable_store_in_the_handler_costs_no_attempt(make_app):
    app = make_app(lease_seconds=LEASE)
    calls = 0

    @app.handler("uses-the-db", max_attempts=1)
    async def uses_the_db(ctx: rota.RunContext, payload: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            try:
                raise StoreUnavailable("PostgreSQL is unreachable: server closed the connection")
            except StoreUnavailable as exc:
                raise RuntimeError("could not save the report") from exc
        return "saved"

    store = await app.store()
    async with working(app):
        run_id = await app.enqueue_async("uses-the-db", {})
        run = await wait_for_state(store, run_id, *TERMINAL_STATES, what="the run to finish")
    assert run.state is RunState.SUCCEEDED  # with max_attempts=1: the outage cost nothing
    assert run.attempt == 1
    assert await _history(store, run_id) == [
        (1, AttemptOutcome.INFRASTRUCTURE),
        (1, AttemptOutcome.SUCCEEDED),
    ]
    [first, _] = await store.attempts(run_id)
    assert (first.error or "").startswith("infrastructure")
