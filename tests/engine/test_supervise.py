"""The supervision helpers: restart with backoff, retry a periodic turn, bounded
cancellation."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import cast

import pytest

from rota.clock import FakeClock, next_tick
from rota.config import Settings
from rota.engine.housekeeping import Housekeeper, duty_phase
from rota.errors import InvalidArgument, StoreUnavailable
from rota.store.port import Store
from rota.supervise import (
    Backoff,
    GaveUp,
    Restarts,
    cancel_all_and_wait,
    cancel_and_wait,
    every,
    supervise,
    until_reachable,
)


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


async def test_supervise_restarts_a_failing_body_until_it_returns():
    restarts = Restarts()
    runs = 0

    async def body() -> None:
        nonlocal runs
        runs += 1
        if runs < 4:
            raise RuntimeError("boom")

    await supervise("flaky", body, restarts, sleep=_no_wait)
    assert runs == 4
    assert restarts.snapshot() == {"flaky": 3}


class _VirtualTime:
    """A clock that only a sleep moves: start-up retries measured without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


async def test_a_start_up_step_is_run_again_while_the_store_is_unreachable():
    restarts, time = Restarts(), _VirtualTime()
    attempts = 0

    async def step() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise StoreUnavailable("PostgreSQL is unreachable: terminating connection")
        return "open"

    opened = await until_reachable(
        "open-store", step, restarts, within=30, sleep=time.sleep, clock=time
    )
    assert (opened, attempts, restarts.snapshot()) == ("open", 3, {"open-store": 2})
    assert 0 < time.now < 1, "retried within a fraction of a second"


async def test_a_start_up_step_gives_up_when_the_store_stays_unreachable():
    restarts, time = Restarts(), _VirtualTime()

    async def step() -> None:
        raise StoreUnavailable("PostgreSQL is unreachable: connection refused")

    with pytest.raises(StoreUnavailable):
        await until_reachable("open-store", step, restarts, within=30, sleep=time.sleep, clock=time)
    assert 25 < time.now <= 30, "it tried for its whole allowance, and no longer"
    assert restarts.of("open-store") > 10


async def test_any_other_start_up_error_is_raised_at_once():
    attempts = 0

    async def step() -> None:
        nonlocal attempts
        attempts += 1
        raise InvalidArgument("database_url", "mysql://h/db", "a sqlite:// or postgresql:// URL")

    with pytest.raises(InvalidArgument):
        await until_reachable("open-store", step, Restarts(), within=30, sleep=_no_wait)
    assert attempts == 1


async def test_every_retries_failed_turns_and_gives_up_when_asked():
    restarts = Restarts()

    async def turn() -> None:
        raise RuntimeError("down")

    with pytest.raises(GaveUp) as caught:
        await every("beat", 1.0, turn, restarts, give_up_after=3, sleep=_no_wait)
    assert caught.value.failures == 3
    assert restarts.of("beat") == 3


async def test_every_stops_by_itself_once_no_longer_wanted():
    turns = 0

    async def turn() -> None:
        nonlocal turns
        turns += 1

    await every("beat", 1.0, turn, Restarts(), keep_going=lambda: turns < 5, sleep=_no_wait)
    assert turns == 5


def test_backoff_grows_to_its_cap_with_jitter_below_it():
    backoff = Backoff(first=0.1, cap=1.0)
    assert [backoff.delay(n, lambda: 1.0) for n in (1, 2, 3, 4, 5, 9)] == [
        0.1,
        0.2,
        0.4,
        0.8,
        1.0,
        1.0,
    ]
    assert backoff.delay(3, lambda: 0.0) == 0.2  # never less than half


async def test_cancel_and_wait_moves_on_from_a_task_that_swallows_its_cancellation():
    release = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
        await release.wait()
        raise RuntimeError("ended badly, later")

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    assert await cancel_and_wait(task, timeout=0.05) is False
    release.set()
    await asyncio.wait({task}, timeout=10)
    assert task.done()  # its error was retrieved (logged), not left for asyncio to report


async def test_cancel_and_wait_on_an_ordinary_task():
    task = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    assert await cancel_and_wait(task, timeout=10) is True
    assert task.cancelled()


async def test_cancel_all_and_wait_cancels_each_task_once():
    """Each task, once cancelled, cleans up with an await of its own (psycopg sends the
    cancel of its query to the server and waits for the answer): a second cancellation
    there would interrupt it. Until 2026-12-06 the tasks after the first were cancelled
    again while they cleaned up, and the leader's duties' connections were closed."""
    in_cleanup = [asyncio.Event() for _ in range(3)]
    release = [asyncio.Event() for _ in range(3)]
    interrupted: list[int] = []

    async def query(n: int) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            in_cleanup[n].set()
            try:
                await release[n].wait()
            except asyncio.CancelledError:
                interrupted.append(n)
            raise

    tasks = [asyncio.create_task(query(n)) for n in range(3)]
    await asyncio.sleep(0)
    waiting = asyncio.create_task(cancel_all_and_wait(tasks, timeout=10))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in in_cleanup)), 10)
    # The first ends its cleanup while the others are still in theirs; the waiter gets
    # a few turns of the loop to do whatever it does next.
    release[0].set()
    await asyncio.wait({tasks[0]}, timeout=10)
    for _ in range(10):
        await asyncio.sleep(0)
    for event in release:
        event.set()
    assert await asyncio.wait_for(waiting, 10) is True
    assert interrupted == []
    assert all(task.cancelled() for task in tasks)


async def test_every_does_not_give_up_on_a_short_burst_of_failures():
    failures = 0

    async def turn() -> None:
        nonlocal failures
        failures += 1
        raise RuntimeError("blip")

    # Ten quick failures, but not spread over the hour it takes to give up.
    await every(
        "beat",
        1.0,
        turn,
        Restarts(),
        keep_going=lambda: failures < 10,
        give_up_after=3,
        give_up_seconds=3600,
        sleep=_no_wait,
    )
    assert failures == 10


async def test_a_cleanup_that_fails_on_the_way_out_does_not_swallow_the_cancellation():
    started = asyncio.Event()

    async def turn() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            raise RuntimeError("the connection is closed")  # e.g. a RESET in a finally

    loop_task = asyncio.create_task(every("vacuum", 1.0, turn, Restarts(), first_now=True))
    await asyncio.wait_for(started.wait(), 10)
    assert await cancel_and_wait(loop_task, timeout=10) is True
    assert loop_task.cancelled()


def test_next_tick_is_the_next_instant_on_the_half_second_grid():
    assert next_tick(100.0, 1.0) == 100.5
    assert next_tick(100.5, 1.0) == 101.5  # strictly after now
    assert next_tick(100.49, 5.0) == 100.5
    assert next_tick(100.51, 5.0) == 105.5
    with pytest.raises(ValueError, match="period"):
        next_tick(1.0, 0.0)


async def test_every_on_absolute_instants_does_not_drift_by_its_work():
    """Each turn takes 0.3 s of (fake) time; the turns still start on the grid."""
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    starts: list[float] = []

    async def turn() -> None:
        starts.append(clock.now().timestamp())
        clock.advance(0.3)  # the work

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    await every(
        "planner",
        1.0,
        turn,
        Restarts(),
        keep_going=lambda: len(starts) < 6,
        sleep=sleep,
        wall=lambda: clock.now().timestamp(),
    )
    origin = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert [round(s - origin, 6) for s in starts] == [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]


async def test_every_falls_on_its_own_phase():
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    starts: list[float] = []

    async def turn() -> None:
        starts.append(clock.now().timestamp())

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    await every(
        "vacuum",
        15.0,
        turn,
        Restarts(),
        keep_going=lambda: len(starts) < 4,
        sleep=sleep,
        wall=lambda: clock.now().timestamp(),
        phase=8.0,
    )
    origin = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert [round(s - origin, 6) for s in starts] == [8.0, 23.0, 38.0, 53.0]


def test_only_the_planner_ticks_in_the_seconds_after_a_cron_slot():
    """A minute's slot drains in its first seconds; the other duties tick later."""
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    keeper = Housekeeper(cast(Store, object()), Settings(), clock)
    slot = datetime(2026, 1, 1, 0, 1, tzinfo=UTC).timestamp()  # a whole minute
    for name, seconds, _ in keeper._duties():
        first = next_tick(slot, seconds, duty_phase(name, seconds)) - slot
        assert first % 1 == 0.5, name  # never on a whole second: a slot with seconds
        if name == "planner":
            assert first == 0.5
        elif seconds >= 10:
            assert first >= 5.0, name
        else:  # the reaper: every few seconds, it cannot miss a drain; not on the slot
            assert first >= seconds / 2, name
