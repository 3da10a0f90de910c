"""How an idle worker learns of work: no wake-up is lost, and a claim that found runs
is followed at once by another (keyed runs it left are not left to the poll).

The poll interval is set far beyond each test's deadline, on both stores, so only the
wake-up path under test can pass it: a notification (PostgreSQL's NOTIFY; on SQLite the
in-process signal of the runs this process commits), the next claim, or the earliest
due run's instant (next_due_in).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import rota
from rota.domain.runs import ClaimedRun, RunFilter
from rota.domain.states import RunState
from rota.engine.planner import Planner
from rota.services import schedules
from rota.store.port import ClaimRequest, Store
from tests.contract.support import T0, enqueue_one
from tests.engine.conftest import working
from tests.waiting import wait_for_state

pytestmark = pytest.mark.timeout(60)

NEVER_POLL = 3600.0  # far past every deadline here: a pickup within it was woken


def _quiet_app(make_app: Callable[..., rota.App]) -> rota.App:
    return make_app(poll_seconds=NEVER_POLL, sqlite_poll_seconds=NEVER_POLL)


async def _noop(ctx: rota.RunContext, payload: Any) -> None:
    return None


async def test_a_run_enqueued_while_a_claim_is_in_flight_is_picked_up(
    make_app: Callable[..., rota.App], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim looked before the run existed and came back empty; the run's wake-up
    arrives while that claim is still in flight. The worker must not sleep through it."""
    app = _quiet_app(make_app)
    app.handler("job")(_noop)
    store = await app.store()
    real_claim, real_wait = store.claim, store.wait_for_work
    waited = asyncio.Event()  # the worker has been through one wait (LISTEN is up)
    raced: list[int] = []
    enqueued = asyncio.Event()

    async def claim_then_enqueue(request: ClaimRequest, now: Any) -> list[ClaimedRun]:
        claimed = await real_claim(request, now)
        if waited.is_set() and not raced and not claimed:
            raced.append(await app.enqueue_async("job", {}))
            enqueued.set()
        return claimed

    idle = asyncio.Event()  # the worker has started waiting

    async def wait_for_work(timeout: float) -> None:
        idle.set()
        await real_wait(timeout)
        waited.set()

    monkeypatch.setattr(store, "claim", claim_then_enqueue)
    monkeypatch.setattr(store, "wait_for_work", wait_for_work)
    async with working(app, concurrency=2):
        # A first run wakes the idle worker (SQLite has no LISTEN connection whose
        # start wakes it); the claim after the one that takes it comes back empty.
        await asyncio.wait_for(idle.wait(), timeout=20)
        await app.enqueue_async("job", {})
        await asyncio.wait_for(enqueued.wait(), timeout=20)
        await wait_for_state(store, raced[0], RunState.SUCCEEDED, timeout=20)


async def test_keyed_runs_beside_plain_ones_start_without_waiting_for_a_poll(
    make_app: Callable[..., rota.App], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain and keyed runs enqueued together (one wake-up) into an idle worker: the
    claim that finds the plain runs returns them without asking about keyed ones, and
    the worker's next claim, at once, takes the keyed runs."""
    app = _quiet_app(make_app)
    app.handler("job")(_noop)
    store = await app.store()
    real_wait = store.wait_for_work
    waited = asyncio.Event()  # the worker is idle and listening

    async def wait_for_work(timeout: float) -> None:
        waited.set()
        await real_wait(timeout)

    monkeypatch.setattr(store, "wait_for_work", wait_for_work)
    async with working(app, concurrency=10):
        await asyncio.wait_for(waited.wait(), timeout=20)
        plain = [{"handler": "job"} for _ in range(3)]
        keyed = [{"handler": "job", "concurrency_key": "customer-1"} for _ in range(3)]
        run_ids = await app.enqueue_many_async(plain + keyed)
        for run_id in run_ids:
            await wait_for_state(store, run_id, RunState.SUCCEEDED, timeout=20)


async def test_a_claim_that_finds_plain_runs_leaves_keyed_ones_to_the_next(
    store: Store,
) -> None:
    """The store's side of it (both stores): nothing due is lost between two claims."""
    plain = await enqueue_one(store, T0)
    keyed = await enqueue_one(store, T0, concurrency_key="k", concurrency_limit=2)
    request = ClaimRequest("w", ("default",), 10, 30.0, ())
    first = {c.run_id for c in await store.claim(request, T0)}
    second = {c.run_id for c in await store.claim(request, T0)}
    assert plain in first
    assert first | second == {plain, keyed}
    assert await store.claim(request, T0) == []


async def test_an_idle_worker_wakes_when_a_future_run_falls_due(
    make_app: Callable[..., rota.App],
) -> None:
    """A run inserted ahead of its run_at wakes the worker only to find it not due yet;
    the worker then sleeps until that run_at (next_due_in), not until its next poll."""
    app = _quiet_app(make_app)
    app.handler("job")(_noop)
    store = await app.store()
    async with working(app, concurrency=2):
        # The wall clock: the wait is real time, judged against the database's clock.
        soon = datetime.now(UTC) + timedelta(seconds=1)
        run_id = await app.enqueue_async("job", {}, run_at=soon)
        await wait_for_state(store, run_id, RunState.SUCCEEDED, timeout=30)


async def test_a_run_planned_while_the_worker_sleeps_starts_at_its_slot(
    make_app: Callable[..., rota.App],
) -> None:
    """The leader plans a slot ahead while the worker sleeps with nothing due: the
    commit wakes it (NOTIFY, or the in-process signal on SQLite), it learns when the
    run falls due, and sleeps to that instant, not to a poll that never comes."""
    app = _quiet_app(make_app)
    app.handler("job")(_noop)
    store = await app.store()
    real_wait = store.wait_for_work
    waited = asyncio.Event()

    async def wait_for_work(timeout: float) -> None:
        waited.set()
        await real_wait(timeout)

    store.wait_for_work = wait_for_work  # type: ignore[method-assign]
    async with working(app, concurrency=2):
        await asyncio.wait_for(waited.wait(), timeout=20)  # idle, nothing planned yet
        spec = schedules.job_spec(app.registry, "every-second", "job", None, cron="* * * * * *")
        job = await schedules.save_job(store, app.clock, spec)
        # This tick or the node's own leader plans the next slots, ahead of them.
        await Planner(store, timedelta(seconds=2)).tick(await store.now(None))
        runs = [r for r in await store.list_runs(RunFilter(limit=10)) if r.job_id == job.id]
        first = min(runs, key=lambda r: r.run_at)
        run = await wait_for_state(store, first.id, RunState.SUCCEEDED, timeout=20)
        assert run.started_at is not None
        assert run.started_at >= first.run_at


async def test_a_run_falling_due_between_an_empty_claim_and_next_due_in_is_not_missed(
    make_app: Callable[..., rota.App], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race that made an idle SQLite worker start a slot's run one poll late: its
    claim looks just before the slot (nothing due), the run falls due, and then
    next_due_in (which counted only runs not due yet) found nothing to wake for. The
    worker now tells next_due_in how long ago its claim looked: a run that fell due
    since is due now."""
    clock = rota.FakeClock(T0)
    app = make_app(
        clock, poll_seconds=NEVER_POLL, sqlite_poll_seconds=NEVER_POLL, worker_dead_seconds=3600
    )
    app.handler("job")(_noop)
    store = await app.store()
    run_id = await enqueue_one(store, T0, handler="job", run_at=T0 + timedelta(seconds=10))
    real_claim, real_wait = store.claim, store.wait_for_work
    waits: list[float] = []
    near = asyncio.Event()  # the clock stands just before the run's run_at
    taken = asyncio.Event()
    stuck = asyncio.Event()

    async def claim(request: ClaimRequest, now: Any) -> list[ClaimedRun]:
        claimed = await real_claim(request, now)
        if claimed:
            taken.set()
        if not claimed and near.is_set() and clock.now() < T0 + timedelta(seconds=10):
            clock.advance(0.002)  # the run falls due right after this claim looked
        return claimed

    async def wait_for_work(timeout: float) -> None:
        waits.append(timeout)
        if timeout > 100 and not taken.is_set():  # only the hour-long poll would take it
            stuck.set()
            await real_wait(timeout)
        elif not near.is_set():
            clock.set(T0 + timedelta(seconds=9.999))  # woken by a poll, a moment early
            near.set()
        await asyncio.sleep(0)

    monkeypatch.setattr(store, "claim", claim)
    monkeypatch.setattr(store, "wait_for_work", wait_for_work)
    async with working(app, concurrency=2):
        done = asyncio.ensure_future(wait_for_state(store, run_id, RunState.SUCCEEDED, timeout=20))
        await asyncio.wait(
            {done, asyncio.ensure_future(stuck.wait())},
            timeout=30,
            return_when=asyncio.FIRST_COMPLETED,
        )
        assert not stuck.is_set(), f"waited a whole poll: {waits}"
        await done
