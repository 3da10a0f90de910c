"""The one-line calls the worker, the leader, the planner and the API make to report
what happened. Each is guarded: an instrument that fails is logged once and counted in
``rota_metrics_errors_total{part}``, and the caller goes on as if nothing happened; a
metrics registry never raises into the hot path.

``set_enabled(False)`` (``ROTA_METRICS=off``) turns every metrics hook into an early
return (the log lines some hooks write stay): the bench compares the same drain with
and without them.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import operator
import os
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, ParamSpec

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from rota.domain.breakers import BreakerRow, BreakerState
from rota.domain.queues import QueueControl
from rota.domain.states import RunState
from rota.observe.cluster import ClusterGauges
from rota.observe.metrics import Instruments

if TYPE_CHECKING:  # the store imports these hooks: no import cycle at run time
    from rota.clock import Clock
    from rota.domain.runs import ClaimedRun, Enqueued, NewRun, Outcome
    from rota.store.port import Store

P = ParamSpec("P")
log = structlog.get_logger("rota.observe")
run_log = structlog.get_logger("rota.runs")


class Observer:
    """The process's registry, its instruments and the leader's cluster gauges."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.registry = CollectorRegistry(auto_describe=False)
        self.instruments = Instruments(self.registry)
        self.cluster = ClusterGauges(time.monotonic)
        self.registry.register(GuardedCollector("cluster_gauges", self.cluster, self.failed))
        self.registry.register(GuardedCollector("run_series", self.instruments.runs, self.failed))
        self._failed_parts: set[str] = set()

    def failed(self, part: str, exc: BaseException, times: int = 1) -> None:
        """An instrument or collector failed (``times``: for that many runs): count it;
        log the first failure of each part (a broken instrument on the hot path must not
        flood the log either)."""
        try:
            self.instruments.errors.labels(part).inc(times)
            if part not in self._failed_parts:
                self._failed_parts.add(part)
                log.warning(
                    "a metrics instrument failed; the work goes on", part=part, error=repr(exc)
                )
        except Exception:  # noqa: BLE001 - the last line of defence must not raise either
            return


class GuardedCollector:
    """A collector whose failure costs its own series, never the whole scrape."""

    def __init__(
        self, part: str, inner: Collector, failed: Callable[[str, BaseException], None]
    ) -> None:
        self.part = part
        self.inner = inner
        self.on_failure = failed

    def collect(self) -> Iterator[Metric]:
        try:
            families = list(self.inner.collect())
        except Exception as exc:  # noqa: BLE001 - counted and logged by on_failure
            self.on_failure(self.part, exc)
            return iter(())
        return iter(families)

    def describe(self) -> Iterator[Metric]:
        return iter(())


def _enabled_from_env() -> bool:
    return os.environ.get("ROTA_METRICS", "on").lower() not in {"0", "off", "false", "no"}


OBSERVER = Observer(_enabled_from_env())


def set_enabled(enabled: bool) -> None:
    OBSERVER.enabled = enabled


def _guarded(
    part: str, metrics: bool = True, per_run: bool = False
) -> Callable[[Callable[P, None]], Callable[P, None]]:
    """A hook that never raises into its caller; with ``metrics``, one that
    ``set_enabled(False)`` turns off (a log line is not a metric: it stays). With
    ``per_run``, the hook reports a batch (its first argument) and a failure counts
    once per run in it, as it did when the hook was called per run."""

    def wrap(fn: Callable[P, None]) -> Callable[P, None]:
        @functools.wraps(fn)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
            if metrics and not OBSERVER.enabled:
                return
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - never into the caller's path
                OBSERVER.failed(part, exc, len(args[0]) if per_run else 1)  # type: ignore[arg-type]

        return guarded

    return wrap


def _queue(name: str) -> str:
    return OBSERVER.instruments.queue_name(name)


def _handler(name: str) -> str:
    return OBSERVER.instruments.handler_name(name)


# -- producing -------------------------------------------------------------------------
_QUEUE_AND_HANDLER = operator.attrgetter("queue", "handler")
_CREATED = operator.attrgetter("created")


@_guarded("enqueue")
def runs_enqueued(runs: Sequence[NewRun], results: Sequence[Enqueued]) -> None:
    # Counted per (queue, handler) first: a bulk enqueue of 20,000 runs of one handler
    # is one labelled increment, not 20,000 (they cost as much as writing the runs).
    created = collections.Counter(
        map(_QUEUE_AND_HANDLER, itertools.compress(runs, map(_CREATED, results)))
    )
    counter = OBSERVER.instruments.enqueued
    for (queue, handler), count in created.items():
        counter.labels(_queue(queue), _handler(handler)).inc(count)


@_guarded("planner")
def slots_planned(runs: Sequence[NewRun], now: datetime) -> None:
    """The runs of one job the planner created (its advance was applied)."""
    instruments = OBSERVER.instruments
    instruments.slots_planned.inc(len(runs))
    for (queue, handler), count in collections.Counter((r.queue, r.handler) for r in runs).items():
        instruments.enqueued.labels(_queue(queue), _handler(handler)).inc(count)
    for run in runs:
        if run.slot_at is not None:
            instruments.schedule_lag.observe(max((now - run.slot_at).total_seconds(), 0.0))


# -- the worker's hot path (rota.observe.run_series) ---------------------------------------
# Called once per claim and once per completion batch, not once per run: a guarded call,
# a lock and a log-level test per run were a tenth of a no-op run's worker CPU.
@_guarded("claim")
def runs_claimed(batch: Sequence[ClaimedRun]) -> None:
    if not batch:
        return
    instruments = OBSERVER.instruments
    instruments.claim_batch.observe(len(batch))
    instruments.runs.claimed_many([(run.queue, run.pickup_delay) for run in batch])


@_guarded("start")
def run_starting(run: ClaimedRun, now: datetime) -> None:
    """A schedule's run's handler is about to start: timed from its slot (the worker
    calls this only for runs with a slot)."""
    if run.slot_at is not None:
        delay = max((now - run.slot_at).total_seconds(), 0.0)
        OBSERVER.instruments.start_delay.observe(delay)


@_guarded("release", per_run=True)
def runs_let_go(runs: Sequence[ClaimedRun]) -> None:
    """The worker no longer holds these runs (finished, lost or handed back)."""
    OBSERVER.instruments.runs.let_go_many([run.queue for run in runs])


def runs_finished(
    attempts: Sequence[tuple[ClaimedRun, Outcome, float]], written: set[int], worker_id: str
) -> None:
    """Attempts that ended, as (run, outcome, handler seconds); their outcomes were
    written (the run ids in ``written``) or refused by the fence: counted and timed,
    and each written one told in a log line."""
    _count_finished(attempts, written)
    _tell_finished(attempts, written, worker_id)


@_guarded("finish", per_run=True)
def _count_finished(
    attempts: Sequence[tuple[ClaimedRun, Outcome, float]], written: set[int]
) -> None:
    kept = [
        (run.queue, run.handler, outcome.state.value, seconds)
        for run, outcome, seconds in attempts
        if run.run_id in written
    ]
    OBSERVER.instruments.runs.finished_many(kept)
    if stale := len(attempts) - len(kept):
        OBSERVER.instruments.stale_writes.inc(stale)


@_guarded("finish-log", metrics=False, per_run=True)
def _tell_finished(
    attempts: Sequence[tuple[ClaimedRun, Outcome, float]], written: set[int], worker_id: str
) -> None:
    """At info when the attempt did not succeed, at debug when it did (ADR 0026: a
    line per success at info was half again a no-op run's worker CPU). A level that is
    filtered out costs one test per batch, not a call per run (where the configured
    logger can tell: structlog's filtering loggers can)."""
    enabled = getattr(run_log, "is_enabled_for", None)
    debug = enabled is None or enabled(logging.DEBUG)
    info = debug or enabled is None or enabled(logging.INFO)
    if not info:
        return
    for run, outcome, seconds in attempts:
        succeeded = outcome.state is RunState.SUCCEEDED
        if run.run_id not in written or (succeeded and not debug):
            continue
        say = run_log.debug if succeeded else run_log.info
        say(
            "run finished",
            run_id=run.run_id,
            job_id=run.job_id,
            handler=run.handler,
            queue=run.queue,
            attempt=run.attempt,
            fence=run.fence,
            worker=worker_id,
            duration_seconds=seconds,
            outcome=outcome.state.value,
        )


@_guarded("leases")
def lease_lost() -> None:
    OBSERVER.instruments.leases_lost.inc()


# -- the leader ---------------------------------------------------------------------------
@_guarded("reaper")
def runs_reclaimed(count: int) -> None:
    OBSERVER.instruments.reclaimed.inc(count)


@_guarded("leader")
def leadership(node_id: str, term: int | None, changed: bool) -> None:
    instruments = OBSERVER.instruments
    instruments.leader.labels(node_id).set(1 if term is not None else 0)
    instruments.leader_term.set(term or 0)
    if changed:
        instruments.leader_changes.inc()
        if term is None:
            OBSERVER.cluster.clear()


async def publish_cluster_gauges(store: Store, clock: Clock) -> None:
    """The leader's timer: read the cluster's counts once and keep them for scrapes.
    A failed read clears the gauges (no stale numbers) and never fails the leader."""
    if not OBSERVER.enabled:
        return
    try:
        now = await store.now(clock.db_now())
        queues = await store.live_queue_counts(now)
        workers = await store.list_workers()
        breakers = await store.list_breakers()
        controls = await store.list_queues()
    except Exception as exc:  # noqa: BLE001 - a metric must not cost the leader its duties
        OBSERVER.cluster.clear()
        OBSERVER.instruments.breakers_open.clear()
        OBSERVER.instruments.queue_paused.clear()
        OBSERVER.failed("cluster_gauges", exc)
        return
    OBSERVER.cluster.publish(queues, workers, now)
    breakers_seen(breakers)
    queues_paused(controls)


@_guarded("queues")
def queues_paused(controls: Sequence[QueueControl]) -> None:
    gauge = OBSERVER.instruments.queue_paused
    gauge.clear()
    for control in controls:
        gauge.labels(control.name).set(1 if control.paused else 0)


@_guarded("breakers")
def breakers_seen(breakers: Sequence[BreakerRow]) -> None:
    gauge = OBSERVER.instruments.breakers_open
    gauge.clear()
    for handler in sorted({b.handler for b in breakers}):
        tripped = sum(b.handler == handler and b.state is not BreakerState.CLOSED for b in breakers)
        gauge.labels(_handler(handler)).set(tripped)


# -- the database and HTTP ------------------------------------------------------------------
@_guarded("database")
def db_error(kind: str) -> None:
    """``kind``: unavailable (could not reach it), refused (it said no) or conflict
    (a serialization failure, run again)."""
    OBSERVER.instruments.db_errors.labels(kind).inc()


@_guarded("database")
def db_reconnected() -> None:
    OBSERVER.instruments.db_reconnects.inc()


@_guarded("http")
def http_request(route: str, method: str, status: int, seconds: float) -> None:
    instruments = OBSERVER.instruments
    route = instruments.route_name(route)
    instruments.http_requests.labels(route, method, str(status)).inc()
    instruments.http_latency.labels(route, method).observe(seconds)
