"""The process's Prometheus instruments, in one registry of their own.

One registry per process, not one per worker: Prometheus scrapes a process, and a
process that runs two workers (tests, a server with an embedded worker) still has one
/metrics. It is not prometheus_client's global default registry, so importing rota adds
nothing to an application's own metrics, and rota's series are exactly these.

Names follow Prometheus's rules: base units (seconds), ``_total`` counters, histograms
whose buckets resolve 1 ms to 1 h. Labels hold queue and handler names only, never run
ids, payloads or error texts, and each label keeps at most ``MAX_LABEL_VALUES``
distinct names: later ones fold into ``other``, so a caller inventing queue names
cannot grow the series without bound.
"""

from __future__ import annotations

import threading

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from rota.observe.run_series import RunSeries

# No ``_created`` series beside every counter and histogram: a 200-handler worker's
# scrape would carry a timestamp line per labelled series that no rule or dashboard
# reads. (A process-wide switch of prometheus_client; rota's metrics are the process's.)
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

# 1 ms ... 1 h: handler durations, pickup delays and schedule lags all fit.
SECONDS_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)
# Handler durations come per (queue, handler, outcome): the one histogram whose series
# multiply with the handlers, so it gets a coarser set (each bound within 6x of the
# next), still 1 ms ... 1 h. A 200-handler scrape is 40% smaller for it.
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0, 900.0, 3600.0)
# Runs per claim: 1 up to the worker's MAX_CLAIM_BATCH (100).
BATCH_BUCKETS = (1, 2, 5, 10, 20, 50, 100)
MAX_LABEL_VALUES = 256
OTHER = "other"


class BoundedNames:
    """At most ``cap`` distinct label values; any name past them is reported as
    ``other``. Safe from several threads: a race can admit a name or two past the cap,
    never an unbounded number."""

    def __init__(self, cap: int = MAX_LABEL_VALUES) -> None:
        self._cap = cap
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, name: str) -> str:
        if name in self._seen:
            return name
        with self._lock:
            if len(self._seen) < self._cap:
                self._seen.add(name)
                return name
        return OTHER


class Instruments:
    """Every per-process series rota exports (the leader's cluster gauges live in
    :mod:`rota.observe.cluster`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.queue_name = BoundedNames()
        self.handler_name = BoundedNames()
        self.route_name = BoundedNames()

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def histogram(
            name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
        ) -> Histogram:
            return Histogram(name, doc, labels, registry=registry, buckets=buckets)

        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, labels, registry=registry)

        self.enqueued = counter(
            "rota_runs_enqueued", "Runs created by this process.", ("queue", "handler")
        )
        # Finished attempts, durations, pickup delays and runs in flight: the per-run
        # series, on a faster path of their own (registered by the caller, guarded).
        self.runs = RunSeries(self.queue_name, self.handler_name, DURATION_BUCKETS, SECONDS_BUCKETS)
        self.claim_batch = histogram(
            "rota_claim_batch_runs", "Runs handed out by one claim.", (), BATCH_BUCKETS
        )
        self.leases_lost = counter(
            "rota_leases_lost", "Leases this worker found taken by another fence."
        )
        self.reclaimed = counter(
            "rota_runs_reclaimed", "Runs the leader took back after their lease expired."
        )
        self.stale_writes = counter(
            "rota_stale_writes_rejected", "Outcomes the database refused: the fence had moved."
        )
        self.leader = gauge("rota_leader", "1 while this node leads the cluster.", ("node",))
        self.leader_term = gauge("rota_leader_term", "The term this node leads in (0: not).")
        self.breakers_open = gauge(
            "rota_breakers_open",
            "Circuit breakers of a handler open or half-open, as the leader last read them.",
            ("handler",),
        )
        self.queue_paused = gauge(
            "rota_queue_paused",
            "1 while a queue is paused cluster-wide (claims skip it), 0 once resumed; "
            "queues an operator has acted on, as the leader last read them.",
            ("queue",),
        )
        self.leader_changes = counter(
            "rota_leader_changes", "Times this node gained or lost leadership."
        )
        self.slots_planned = counter(
            "rota_schedule_slots_planned", "Schedule slots the leader turned into runs."
        )
        self.schedule_lag = histogram(
            "rota_schedule_lag_seconds",
            "From a schedule slot to its run being created (0 when planned ahead).",
            (),
            SECONDS_BUCKETS,
        )
        self.start_delay = histogram(
            "rota_schedule_start_delay_seconds",
            "From a schedule slot to its run's handler starting (how late it started).",
            (),
            SECONDS_BUCKETS,
        )
        self.db_errors = counter(
            "rota_db_errors", "Database calls that failed, by kind.", ("kind",)
        )
        self.db_reconnects = counter(
            "rota_db_reconnects", "Times the database answered again after an outage."
        )
        self.http_requests = counter(
            "rota_http_requests",
            "HTTP requests served, by route template and status.",
            ("route", "method", "status"),
        )
        self.http_latency = histogram(
            "rota_http_request_duration_seconds",
            "HTTP request latency, by route template.",
            ("route", "method"),
            SECONDS_BUCKETS,
        )
        self.errors = counter(
            "rota_metrics_errors",
            "Failures of rota's own instruments and collectors (the work went on).",
            ("part",),
        )
