"""Waiting for a run to reach a state: one helper, so every test polls the same way
(the store, every 20 ms, with a deadline) and fails with the same clear message.

Its own module rather than tests/helpers.py so it can grow without touching the
process-worker helpers there."""

from __future__ import annotations

import asyncio
from typing import Any

import rota
from rota.domain.runs import Run
from rota.domain.states import RunState
from rota.store.port import Store
from tests.helpers import eventually


async def wait_for_state(
    store: Store,
    run_id: int,
    *states: RunState,
    attempt: int | None = None,
    timeout: float = 20.0,
    what: str | None = None,
) -> Run:
    """The run, once it is in one of ``states`` (and at ``attempt``, if given)."""
    assert states, "name at least one state to wait for"

    async def reached() -> Run | None:
        run = await store.get_run(run_id)
        if run is None or run.state not in states:
            return None
        if attempt is not None and run.attempt != attempt:
            return None
        return run

    wanted = " or ".join(states) + ("" if attempt is None else f" at attempt {attempt}")
    return await eventually(reached, timeout, what or f"run {run_id} to be {wanted}")


def wait_for_state_of(app: rota.App, run_id: int, *states: RunState, **options: Any) -> Run:
    """:func:`wait_for_state` from plain (sync) test code, on ``app``'s database (for
    tests that drive worker processes from the outside)."""

    async def wait() -> Run:
        try:
            return await wait_for_state(await app.store(), run_id, *states, **options)
        finally:
            await app.aclose()  # the store of this short-lived loop

    return asyncio.run(wait())
