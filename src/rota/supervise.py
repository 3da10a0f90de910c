"""Supervision of the tasks that run for a node's whole life.

A background task that dies must be seen, logged, counted and restarted, never left as
a silent reference: a heartbeat loop that ended lets every lease expire, a leader duty
that ended stops planning for the whole cluster. The tools, used everywhere rota
starts such a task:

- :func:`supervise` runs a body that is meant to run forever and restarts it when it
  raises, with capped exponential backoff and jitter;
- :func:`every` runs one turn of a periodic task at its pace; a turn that raises is
  logged and counted and the next one comes sooner (backoff capped at the interval);
- :func:`until_reachable` runs a one-off start-up step again while the store is
  unreachable, for a bounded time;
- :func:`cancel_and_wait` cancels a task and waits for it with a bound. A cancellation
  can be swallowed (asyncio ``wait_for`` on Python 3.11 inside a pool wait), and an
  unbounded wait for such a task wedges its caller forever.

Failures are counted per task name in a :class:`Restarts` object, which a metrics
endpoint can expose.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from rota.clock import TICK_PHASE_SECONDS, next_tick
from rota.errors import StoreError, StoreUnavailable
from rota.observe import hooks

log = structlog.get_logger("rota.supervise")
# How long a cancelled background task gets to end before its canceller moves on.
CANCEL_WAIT_SECONDS = 5.0
Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")


class Restarts:
    """How many times each supervised task failed (and was restarted or retried)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, task: str) -> int:
        self._counts[task] = self._counts.get(task, 0) + 1
        return self._counts[task]

    def of(self, task: str) -> int:
        return self._counts.get(task, 0)

    def snapshot(self) -> dict[str, int]:
        return dict(self._counts)


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with "equal jitter": the n-th consecutive failure
    waits between half and all of ``min(cap, first * 2**(n-1))``, so many nodes that
    failed together (a database restart) do not all come back in the same instant."""

    first: float = 0.1
    cap: float = 30.0

    def delay(self, failures: int, draw: Callable[[], float] = random.random) -> float:
        ceiling = min(self.cap, self.first * 2.0 ** max(failures - 1, 0))
        return ceiling / 2 + draw() * ceiling / 2


class GaveUp(Exception):
    """A periodic task failed ``failures`` times in a row and its owner asked it to stop
    trying (a leader whose duties cannot run resigns rather than hold the lease idle)."""

    def __init__(self, task: str, failures: int) -> None:
        self.task = task
        self.failures = failures
        super().__init__(f"{task} failed {failures} times in a row")


def _honour_cancellation(exc: BaseException) -> None:
    """An error raised while the task was being cancelled (a cleanup that failed on the
    way out) must not swallow the cancellation: the task ends, as it was asked to."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError from exc


def _failed(task: str, restarts: Restarts, exc: BaseException, **fields: Any) -> int:
    count = restarts.add(task)
    if isinstance(exc, StoreError):
        # Expected while the database is away: one line each, not a traceback each.
        log.warning("task failed", task=task, failures_total=count, error=str(exc), **fields)
    else:
        # A bug: the traceback says where; locals are never rendered (payloads).
        log.error("task failed", task=task, failures_total=count, exc_info=exc, **fields)
    return count


async def supervise(
    task: str,
    body: Callable[[], Awaitable[None]],
    restarts: Restarts,
    *,
    backoff: Backoff = Backoff(),
    sleep: Sleep = asyncio.sleep,
) -> None:
    """Run ``body`` until it returns or the caller is cancelled; when it raises, log
    the error with its traceback, count it, wait, and run it again. Consecutive
    failures wait longer; a body that ran for at least ``backoff.cap`` before failing
    starts the count afresh."""
    loop = asyncio.get_running_loop()
    failures = 0
    while True:
        started = loop.time()
        try:
            await body()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged with its cause, then restarted
            _honour_cancellation(exc)
            failures = 1 if loop.time() - started >= backoff.cap else failures + 1
            delay = backoff.delay(failures)
            _failed(task, restarts, exc, restart_in=round(delay, 3))
            await sleep(delay)
        else:
            return


async def every(
    task: str,
    seconds: float,
    turn: Callable[[], Awaitable[object]],
    restarts: Restarts,
    *,
    keep_going: Callable[[], bool] = lambda: True,
    give_up_after: int | None = None,
    give_up_seconds: float = 0.0,
    first_now: bool = False,
    sleep: Sleep = asyncio.sleep,
    wall: Callable[[], float] | None = None,
    phase: float = TICK_PHASE_SECONDS,
) -> None:
    """Call ``turn`` every ``seconds`` while ``keep_going()`` holds (checked before
    every turn, so a loop whose cancellation was swallowed still ends by itself).

    With ``wall`` (seconds since the epoch, from the node's Clock) the turns fall on
    absolute instants, :func:`rota.clock.next_tick` (``phase + k * seconds``), instead
    of ``seconds`` after the previous turn ended: the leader's ticks do not drift by
    the work they do.

    A turn that raises is logged and counted, and the next one comes after a backoff
    capped at ``seconds`` (a failed lease renewal is retried sooner, not later). After
    ``give_up_after`` consecutive failures spread over at least ``give_up_seconds``
    (a blip of a second is not a reason to give up), raise :class:`GaveUp`.
    """
    loop = asyncio.get_running_loop()
    backoff = Backoff(first=min(0.1, seconds), cap=seconds)
    failures = 0
    failing_since = 0.0

    def pause() -> float:
        if wall is None:
            return seconds
        now = wall()
        return max(next_tick(now, seconds, phase) - now, 0.0)

    if not first_now:
        await sleep(pause())
    while keep_going():
        try:
            await turn()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # logged with its cause, then retried
            _honour_cancellation(exc)
            failures += 1
            if failures == 1:
                failing_since = loop.time()
            _failed(task, restarts, exc, consecutive=failures)
            spent = give_up_after is not None and failures >= give_up_after
            if spent and loop.time() - failing_since >= give_up_seconds:
                raise GaveUp(task, failures) from exc
            await sleep(backoff.delay(failures))
            continue
        failures = 0
        await sleep(pause())


async def until_reachable(
    step: str,
    body: Callable[[], Awaitable[T]],
    restarts: Restarts,
    *,
    within: float,
    backoff: Backoff = Backoff(first=0.1, cap=2.0),
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] | None = None,
) -> T:
    """Run a one-off ``step`` (a node's start-up: opening the store, registering) and
    run it again while the store is unreachable, for at most ``within`` seconds; then
    the last error is raised. A dropped connection or a database restarting during
    start-up is a blip the node's loops would ride out a moment later, not a reason to
    exit. Any other error is raised at once: bad settings must fail fast."""
    now = clock or asyncio.get_running_loop().time
    deadline = now() + within
    failures = 0
    while True:
        try:
            return await body()
        except StoreUnavailable as exc:
            _honour_cancellation(exc)
            failures += 1
            delay = backoff.delay(failures)
            if now() + delay > deadline:
                raise
            _failed(step, restarts, exc, retry_in=round(delay, 3))
            await sleep(delay)


async def cancel_and_wait(task: asyncio.Task[Any] | None, timeout: float, name: str = "") -> bool:
    """Cancel ``task`` and wait at most ``timeout`` seconds for it to end; True if it
    ended. One that did not (it swallowed the cancellation) is logged loudly and left
    behind: its owner moves on, and the task must stop by itself (rota's loops check
    that they are still wanted on every turn). Whatever it ends with later is logged,
    never left as "Task exception was never retrieved"."""
    if task is None:
        return True
    return await cancel_all_and_wait([task], timeout, name)


async def cancel_all_and_wait(
    tasks: list[asyncio.Task[Any]], timeout: float, name: str = ""
) -> bool:
    """:func:`cancel_and_wait` for several tasks: all are cancelled first, so a second
    cancellation of the caller cannot leave some of them running uncancelled, and each
    exactly once. A task cancelled again while it cleans up is interrupted there: psycopg,
    cancelling the query it was awaiting on the server, closes the connection instead."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return True
    _, stuck = await asyncio.wait(tasks, timeout=timeout)
    for task in tasks:
        if task not in stuck:
            retrieve(task)
            continue
        log.error(
            "task did not stop when cancelled; moving on without it",
            task=name or task.get_name(),
            waited_seconds=timeout,
        )
        task.add_done_callback(retrieve)
    return not stuck


def retrieve(task: asyncio.Task[Any]) -> None:
    """Collect a finished task's exception (logging it), so asyncio never reports it as
    never retrieved. Usable as a done callback."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("background task ended with an error", task=task.get_name(), exc_info=exc)


def watched(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
    """A task whose failure is logged when it ends, even if nobody awaits it. Made by
    the running loop itself: the worker makes one per run, and ensure_future's checks
    cost more than the task."""
    task = asyncio.get_running_loop().create_task(coro, name=name)
    task.add_done_callback(retrieve)
    return task


class Reachability:
    """Whether this node could reach the database lately, as its election found.

    A database restart or a network outage cuts every node off at once: no worker can
    renew its leases, so they all lapse together. The first node to get back must not
    take that for a cluster of crashed workers: :meth:`settling` tells the reaper to
    wait until the others have had time to reconnect and renew (see housekeeping).
    Only an outage long enough to have cost a live worker a renewal counts, so brief
    blips (one broken connection) never hold reaping back."""

    def __init__(self) -> None:
        self._down = False
        self._last_ok: float | None = None
        self._outage: tuple[float | None, float] | None = None  # (last ok, back at)

    def unreachable(self) -> None:
        self._down = True

    def reachable(self, now: float) -> None:
        if self._down:
            hooks.db_reconnected()
            self._outage = (self._last_ok, now)
        self._down = False
        self._last_ok = now

    def settling(self, now: float, grace: float, long_enough: float) -> bool:
        """Down, or back for less than ``grace`` seconds, after an outage of at least
        ``long_enough`` seconds (unknown length, for a node that was never up, counts)."""
        if self._down:
            return self._last_ok is None or now - self._last_ok >= long_enough
        if self._outage is None:
            return False
        last_ok, back_at = self._outage
        lasted = long_enough if last_ok is None else back_at - last_ok
        return lasted >= long_enough and now - back_at < grace
