"""The per-run series — attempts finished and their durations, pickup delays, runs in
flight — kept in plain dicts under one lock and turned into Prometheus families only
when scraped.

A busy worker reports thousands of runs a second per process. prometheus_client's
instruments take a lock per value and walk their buckets in Python: about 8 µs a run
for these four series, some 15% of a no-op run's whole cost in the bench's drain. Here
one run costs one uncontended lock, a dict lookup and a C bisect; the cumulative bucket
counts are summed at scrape time, which is rare.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

Name = Callable[[str], str]


class _Histogram:
    """Counts per bucket (not cumulative) and the sum, for one label set."""

    __slots__ = ("buckets", "sum")

    def __init__(self, size: int) -> None:
        self.buckets = [0] * (size + 1)  # the last one is +Inf
        self.sum = 0.0


class RunSeries:
    def __init__(
        self,
        queue_name: Name,
        handler_name: Name,
        duration_bounds: tuple[float, ...],
        delay_bounds: tuple[float, ...],
    ) -> None:
        self._queue_name = queue_name
        self._handler_name = handler_name
        self._duration_bounds = duration_bounds
        self._delay_bounds = delay_bounds
        self._lock = threading.Lock()
        # Keyed by the names as the run has them; several may share one bounded label set
        # (the names past the cap all become "other").
        self._finished: dict[tuple[str, str, str], tuple[list[int], _Histogram]] = {}
        self._by_labels: dict[tuple[str, str, str], tuple[list[int], _Histogram]] = {}
        self._queues: dict[str, tuple[list[int], _Histogram]] = {}
        self._queues_by_label: dict[str, tuple[list[int], _Histogram]] = {}

    # -- recording (the hot path) ----------------------------------------------------------
    # The worker reports a claim's runs, and a completion batch's, in one call each: one
    # lock for the batch, not one per run.
    def claimed(self, queue: str, pickup_delay: float | None) -> None:
        self.claimed_many([(queue, pickup_delay)])

    def claimed_many(self, runs: Iterable[tuple[str, float | None]]) -> None:
        bounds = self._delay_bounds
        with self._lock:
            for queue, pickup_delay in runs:
                in_flight, delays = self._queue(queue)
                in_flight[0] += 1
                if pickup_delay is not None:
                    delay = max(pickup_delay, 0.0)
                    delays.buckets[bisect_left(bounds, delay)] += 1
                    delays.sum += delay

    def let_go(self, queue: str) -> None:
        self.let_go_many([queue])

    def let_go_many(self, queues: Iterable[str]) -> None:
        with self._lock:
            for queue in queues:
                self._queue(queue)[0][0] -= 1

    def finished(self, queue: str, handler: str, outcome: str, seconds: float) -> None:
        self.finished_many([(queue, handler, outcome, seconds)])

    def finished_many(self, attempts: Iterable[tuple[str, str, str, float]]) -> None:
        """Attempts as (queue, handler, outcome, seconds)."""
        bounds = self._duration_bounds
        with self._lock:
            for queue, handler, outcome, seconds in attempts:
                key = (queue, handler, outcome)
                found = self._finished.get(key)
                if found is None:
                    labels = (self._queue_name(queue), self._handler_name(handler), outcome)
                    found = self._by_labels.setdefault(labels, ([0], _Histogram(len(bounds))))
                    self._finished[key] = found
                count, durations = found
                count[0] += 1
                durations.buckets[bisect_left(bounds, seconds)] += 1
                durations.sum += seconds

    def _queue(self, queue: str) -> tuple[list[int], _Histogram]:
        found = self._queues.get(queue)
        if found is None:
            label = self._queue_name(queue)
            found = self._queues_by_label.setdefault(
                label, ([0], _Histogram(len(self._delay_bounds)))
            )
            self._queues[queue] = found
        return found

    # -- scraping -----------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        with self._lock:
            finished = [
                (labels, count[0], list(h.buckets), h.sum)
                for labels, (count, h) in self._by_labels.items()
            ]
            queues = [
                (queue, in_flight[0], list(h.buckets), h.sum)
                for queue, (in_flight, h) in self._queues_by_label.items()
            ]
        counter = CounterMetricFamily(
            "rota_runs_finished",
            "Attempts this process finished, by outcome.",
            labels=("queue", "handler", "outcome"),
        )
        durations = HistogramMetricFamily(
            "rota_run_duration_seconds",
            "Handler time of one attempt.",
            labels=("queue", "handler", "outcome"),
        )
        for labels, count, buckets, total in finished:
            counter.add_metric(list(labels), count)
            durations.add_metric(list(labels), _cumulative(self._duration_bounds, buckets), total)
        in_flight = GaugeMetricFamily(
            "rota_runs_in_flight", "Runs this process holds a lease on.", labels=("queue",)
        )
        delays = HistogramMetricFamily(
            "rota_run_pickup_delay_seconds",
            "From a run falling due to a worker claiming it.",
            labels=("queue",),
        )
        for queue, held, buckets, total in queues:
            in_flight.add_metric([queue], held)
            if sum(buckets):
                delays.add_metric([queue], _cumulative(self._delay_bounds, buckets), total)
        yield from (counter, durations, in_flight, delays)

    def describe(self) -> Iterator[Metric]:
        return iter(())


def _cumulative(bounds: tuple[float, ...], buckets: list[int]) -> Sequence[tuple[str, float]]:
    running = 0
    out: list[tuple[str, float]] = []
    for bound, count in zip((*bounds, float("inf")), buckets, strict=True):
        running += count
        out.append((floatToGoString(bound), running))  # type: ignore[no-untyped-call]
    return out
