"""Priority aging bounds starvation; a run past its start-by deadline never runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest, Store
from tests.engine.conftest import working
from tests.waiting import wait_for_state

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
AGING = 60.0  # the store's default: waiting a minute is worth one priority level


async def test_a_low_priority_run_starts_within_the_aging_bound_under_a_flood(store: Store):
    """DESIGN.md: a priority-p run waits at most (10 - p) x aging_seconds, plus the time to
    drain what was already ahead of it."""
    [low] = await store.enqueue([NewRun("h", "{}", priority=1)], T0)
    request = ClaimRequest("w", ("default",), 5, 30.0)
    started_at = None
    for second in range(0, 600):
        now = T0 + timedelta(seconds=second)
        await store.enqueue([NewRun("h", "{}", priority=10) for _ in range(5)], now)
        claimed = await store.claim(request, now)  # exactly as many as arrive: a flood
        outcomes = [
            Outcome(c.run_id, c.fence, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED)
            for c in claimed
        ]
        await store.complete(outcomes, now)
        if low.run_id in {c.run_id for c in claimed}:
            started_at = second
            break
    bound = (10 - 1) * AGING
    assert started_at is not None, "the low-priority run starved"
    assert bound - 60 < started_at <= bound + 1, started_at


async def test_an_expired_run_never_starts(make_app, clock):
    app = make_app(clock)
    calls: list[int] = []

    @app.handler("report")
    async def report(ctx: rota.RunContext, payload: dict) -> None:
        calls.append(ctx.run_id)

    late = await app.enqueue_async("report", {}, deadline=clock.now() + timedelta(seconds=10))
    clock.advance(seconds=30)  # nobody was working for half a minute
    store = await app.store()
    async with working(app):
        marker = await app.enqueue_async("report", {})
        await wait_for_state(store, marker, RunState.SUCCEEDED, what="the marker to run")
        run = await wait_for_state(
            store, late, RunState.CANCELLED, what="the late run to be cancelled"
        )
    assert run.error.startswith("deadline_exceeded")
    assert calls == [marker]


async def test_a_deadline_in_the_past_is_refused(make_app, clock):
    app = make_app(clock)

    @app.handler("report")
    async def report(ctx: rota.RunContext, payload: dict) -> None:
        return None

    with pytest.raises(rota.InvalidArgument, match="deadline"):
        await app.enqueue_async("report", {}, deadline=clock.now() - timedelta(seconds=1))
