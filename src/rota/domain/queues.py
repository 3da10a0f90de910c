"""Queues as a thing an operator acts on (issue 29, ADR 0035): whether a queue is paused,
and one queue's summary put together from reads the cluster already makes (the live
counts, the finished-run rollups, the worker registry, the caps). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.domain.limits import Limit, LimitScope
from rota.domain.runs import check_name
from rota.domain.states import RunState
from rota.domain.stats import FinishedCount, QueueCount
from rota.domain.workers import WorkerInfo, WorkerState

# Throughput and failure rate are read from the last quarter hour of finished runs
# (whole minutes: the leader's per-minute rollups answer it, never a scan of history).
RECENT_WINDOW = timedelta(minutes=15)
FAILED_STATES = frozenset({RunState.FAILED, RunState.TIMED_OUT, RunState.DEAD_LETTERED})
DEPTH_STATES = (RunState.PENDING, RunState.RETRYING, RunState.CLAIMED, RunState.RUNNING)


def check_queue_name(value: object) -> str:
    return check_name("queue name", value)


@dataclass(frozen=True)
class QueueControl:
    """What an operator set on a queue: paused (since when, by whom) or not."""

    name: str
    paused: bool
    paused_at: datetime | None = None
    paused_by: str | None = None

    def __post_init__(self) -> None:
        check_queue_name(self.name)


@dataclass(frozen=True)
class QueueSummary:
    """One queue as its operator sees it."""

    name: str
    depth: Mapping[RunState, int]  # unfinished runs by state (DEPTH_STATES)
    dead_letters: int
    oldest_due_at: datetime | None  # the longest-waiting due run became due then
    finished: int  # in the recent window
    failed: int  # failed, timed out or dead-lettered, in the recent window
    window_seconds: float
    workers: tuple[str, ...]  # node ids of the live workers that serve the queue
    control: QueueControl
    concurrency_limit: int | None = None
    now: datetime | None = field(default=None, compare=False)

    @property
    def throughput_per_minute(self) -> float:
        return self.finished * 60.0 / self.window_seconds if self.window_seconds > 0 else 0.0

    @property
    def failure_rate(self) -> float | None:
        """Of the runs finished in the window; None when none finished."""
        return None if self.finished == 0 else self.failed / self.finished

    @property
    def oldest_due_age(self) -> float | None:
        if self.oldest_due_at is None or self.now is None:
            return None
        return max((self.now - self.oldest_due_at).total_seconds(), 0.0)


def summarize(
    now: datetime,
    live: Iterable[QueueCount],
    finished: Iterable[FinishedCount],
    workers: Iterable[WorkerInfo],
    controls: Iterable[QueueControl],
    limits: Iterable[Limit],
    window: timedelta = RECENT_WINDOW,
) -> list[QueueSummary]:
    """Every queue that has runs, finished runs in the window, a worker, a control or a
    cap, by name. ``live`` and ``finished`` are already narrowed to what the reader may
    see; a queue's name, workers and controls are the cluster's."""
    depth: dict[str, dict[RunState, int]] = {}
    dead: dict[str, int] = {}
    oldest: dict[str, datetime] = {}
    for count in live:
        if count.state is RunState.DEAD_LETTERED:
            dead[count.queue] = dead.get(count.queue, 0) + count.count
            continue
        states = depth.setdefault(count.queue, {})
        states[count.state] = states.get(count.state, 0) + count.count
        if count.oldest_due_at is not None:
            seen = oldest.get(count.queue)
            oldest[count.queue] = min(seen, count.oldest_due_at) if seen else count.oldest_due_at
    done: dict[str, int] = {}
    failed: dict[str, int] = {}
    for item in finished:
        done[item.queue] = done.get(item.queue, 0) + item.count
        if item.state in FAILED_STATES:
            failed[item.queue] = failed.get(item.queue, 0) + item.count
    serving: dict[str, list[str]] = {}
    for worker in workers:
        if worker.state is not WorkerState.DEAD:
            for queue in worker.queues:
                serving.setdefault(queue, []).append(worker.node_id)
    by_name = {control.name: control for control in controls}
    caps = {c.name: c.max_running for c in limits if c.scope is LimitScope.QUEUE}
    names = {*depth, *dead, *done, *serving, *by_name, *caps}
    return [
        QueueSummary(
            name=name,
            depth={state: depth.get(name, {}).get(state, 0) for state in DEPTH_STATES},
            dead_letters=dead.get(name, 0),
            oldest_due_at=oldest.get(name),
            finished=done.get(name, 0),
            failed=failed.get(name, 0),
            window_seconds=window.total_seconds(),
            workers=tuple(sorted(serving.get(name, ()))),
            control=by_name.get(name, QueueControl(name, paused=False)),
            concurrency_limit=caps.get(name),
            now=now,
        )
        for name in sorted(names)
    ]
