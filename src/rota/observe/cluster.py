"""Cluster-wide gauges, computed by the leader on a timer.

Queue depths, the oldest due run's age, dead letters and workers by state describe the
whole cluster, so one node computes them: the leader, every ``REFRESH_SECONDS``, with
one indexed read (``live_queue_counts``) and the worker list. A scrape only reads the
last snapshot: never one query per scrape per process. Other nodes export none of
these series, and neither does a leader whose snapshot is older than ``STALE_AFTER``
(a leader that stopped refreshing must not show yesterday's queue as today's).

Each series carries its namespace, so a scrape by a principal limited to some
namespaces is given only theirs (:meth:`ClusterGauges.families` with ``namespaces``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from rota.domain.states import RunState
from rota.domain.stats import QueueCount
from rota.domain.workers import WorkerInfo, WorkerState

REFRESH_SECONDS = 10.0
STALE_AFTER = 3 * REFRESH_SECONDS
LIVE_STATES = (RunState.PENDING, RunState.CLAIMED, RunState.RUNNING, RunState.RETRYING)


@dataclass(frozen=True)
class Snapshot:
    queues: tuple[QueueCount, ...]
    workers: dict[WorkerState, int]
    now: datetime  # the database's now when the counts were read
    taken_at: float  # monotonic


class ClusterGauges:
    """The leader's last snapshot, exposed as a prometheus_client collector."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()

    def publish(
        self, queues: Iterable[QueueCount], workers: Iterable[WorkerInfo], now: datetime
    ) -> None:
        by_state = Counter(worker.state for worker in workers)
        snapshot = Snapshot(
            tuple(queues),
            {state: by_state.get(state, 0) for state in WorkerState},
            now,
            self._monotonic(),
        )
        with self._lock:
            self._snapshot = snapshot

    def clear(self) -> None:
        """Leadership ended (or the read failed): export nothing rather than old news."""
        with self._lock:
            self._snapshot = None

    def current(self) -> Snapshot | None:
        with self._lock:
            snapshot = self._snapshot
        if snapshot is None or self._monotonic() - snapshot.taken_at > STALE_AFTER:
            return None
        return snapshot

    def collect(self) -> Iterator[Metric]:
        """prometheus_client's collector protocol: everything, for a full-reach scrape."""
        yield from self.families(None)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the series come and go with leadership: nothing to pre-declare

    def families(self, namespaces: frozenset[str] | None) -> Iterator[Metric]:
        """The gauges, limited to ``namespaces`` (None: every namespace). The workers
        gauge names no namespace, so it goes to full-reach callers only."""
        snapshot = self.current()
        if snapshot is None:
            return
        seen = [c for c in snapshot.queues if namespaces is None or c.namespace in namespaces]
        runs = GaugeMetricFamily(
            "rota_queue_runs",
            "Unfinished runs and dead letters per queue and state (from the leader).",
            labels=("namespace", "queue", "state"),
        )
        oldest = GaugeMetricFamily(
            "rota_queue_oldest_due_age_seconds",
            "How long the longest-waiting due run of a queue has waited (from the leader).",
            labels=("namespace", "queue"),
        )
        dead = GaugeMetricFamily(
            "rota_dead_letter_runs",
            "Dead-lettered runs per queue (from the leader).",
            labels=("namespace", "queue"),
        )
        due_ages: dict[tuple[str, str], float] = {}
        queues: set[tuple[str, str]] = set()
        for count in seen:
            key = (count.namespace, count.queue)
            queues.add(key)
            if count.state is RunState.DEAD_LETTERED:
                dead.add_metric(list(key), count.count)
                continue
            runs.add_metric([*key, count.state.value], count.count)
            if count.oldest_due_at is not None:
                age = max((snapshot.now - count.oldest_due_at).total_seconds(), 0.0)
                due_ages[key] = max(due_ages.get(key, 0.0), age)
        for key in sorted(queues):
            # Every queue has an age, 0 when nothing is due: an alert on it never sees a
            # gap between "a run is late" and "the queue emptied".
            oldest.add_metric(list(key), due_ages.get(key, 0.0))
        yield from (runs, oldest, dead)
        if namespaces is None:
            workers = GaugeMetricFamily(
                "rota_workers", "Registered workers by state (from the leader).", labels=("state",)
            )
            for state, number in snapshot.workers.items():
                workers.add_metric([state.value], number)
            yield workers
