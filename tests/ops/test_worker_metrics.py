"""A live worker reports what it did: runs enqueued, claimed, finished by outcome with
their durations, pickup delays, in-flight runs, and one log line per finished run.
On SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
import structlog

import rota
from rota.domain.states import RunState
from rota.observe import hooks
from tests.engine.conftest import working
from tests.helpers import eventually
from tests.waiting import wait_for_state

from .metrics_support import Delta, sample


async def test_finished_runs_are_counted_timed_and_logged(make_app, monkeypatch) -> None:
    # A fresh logger for the run lines: the module's own may have been cached on its
    # first use under an earlier test's configuration (the CLI run in this process
    # caches loggers), and a cached logger writes past capture_logs.
    monkeypatch.setattr(hooks, "run_log", structlog.get_logger("rota.runs"))
    app = make_app()

    @app.handler("om-ok", queue="om-q")
    async def ok(ctx: rota.RunContext, payload: int) -> int:
        return payload

    @app.handler("om-broken", queue="om-q", max_attempts=1)
    async def broken(ctx: rota.RunContext, payload: int) -> None:
        raise RuntimeError("secret-payload-text")

    store = await app.store()
    delta = Delta()
    with structlog.testing.capture_logs() as logs:
        async with working(app, node_id="om-w1"):
            ok_ids = [await app.enqueue_async("om-ok", n) for n in range(3)]
            bad_id = await app.enqueue_async("om-broken", 7)
            for run_id in ok_ids:
                await wait_for_state(store, run_id, RunState.SUCCEEDED)
            await wait_for_state(store, bad_id, RunState.DEAD_LETTERED)
            await eventually(
                lambda: _async(delta("rota_runs_finished_total", _labels("om-broken")) == 1),
                what="the dead letter counted",
            )

    assert delta("rota_runs_enqueued_total", {"queue": "om-q", "handler": "om-ok"}) == 3
    assert delta("rota_runs_finished_total", _labels("om-ok", "succeeded")) == 3
    assert delta("rota_run_duration_seconds_count", _labels("om-ok", "succeeded")) == 3
    assert delta("rota_run_pickup_delay_seconds_count", {"queue": "om-q"}) == 4
    assert delta("rota_claim_batch_runs_count") >= 1
    assert sample("rota_runs_in_flight", {"queue": "om-q"}) == 0

    finished = [entry for entry in logs if entry["event"] == "run finished"]
    # A success is told at debug (a line per success at info was half again the
    # worker's work, ADR 0026), every other outcome at info. Whether debug lines reach
    # this capture depends on the level an earlier test of this process configured
    # (structlog caches its loggers), so only their level is checked here;
    # test_worker_http checks both levels in a worker process of its own.
    assert {e["run_id"] for e in finished} - set(ok_ids) == {bad_id}
    assert {e["log_level"] for e in finished if e["run_id"] in ok_ids} <= {"debug"}
    line = next(e for e in finished if e["run_id"] == bad_id)
    assert line["log_level"] == "info"
    assert line["outcome"] == "dead_lettered"
    assert line["handler"] == "om-broken"
    assert line["queue"] == "om-q"
    assert line["attempt"] == 1
    assert line["worker"] == "om-w1"
    assert line["fence"] >= 1
    assert line["duration_seconds"] >= 0
    assert "job_id" in line
    # Never an error text or a payload in the line.
    assert "secret-payload-text" not in json.dumps(finished)


def _labels(handler: str, outcome: str = "dead_lettered") -> dict[str, str]:
    return {"queue": "om-q", "handler": handler, "outcome": outcome}


async def _async(value: bool) -> bool:
    return value


async def test_a_failing_instrument_never_stops_the_worker(make_app, monkeypatch) -> None:
    app = make_app()

    @app.handler("om-guarded", queue="om-guarded-q")
    async def guarded(ctx: rota.RunContext, payload: int) -> int:
        return payload

    class Broken:
        def __getattr__(self, name: str) -> object:
            raise ValueError("instrument broke")

    monkeypatch.setattr(hooks.OBSERVER.instruments, "runs", Broken())
    store = await app.store()
    delta = Delta()
    async with working(app, node_id="om-w2"):
        run_ids = [await app.enqueue_async("om-guarded", n) for n in range(3)]
        for run_id in run_ids:
            await wait_for_state(store, run_id, RunState.SUCCEEDED)
    assert delta("rota_metrics_errors_total", {"part": "finish"}) == 3
    assert delta("rota_metrics_errors_total", {"part": "claim"}) >= 1


def test_label_values_are_capped_and_fold_into_other() -> None:
    from rota.observe.metrics import OTHER, BoundedNames

    names = BoundedNames(cap=3)
    assert [names(n) for n in ("a", "b", "c", "d", "a", "e")] == ["a", "b", "c", OTHER, "a", OTHER]


@pytest.mark.parametrize("enabled", [False])
async def test_switched_off_the_hooks_record_nothing(make_app, enabled: bool) -> None:
    app = make_app()

    @app.handler("om-off")
    async def off(ctx: rota.RunContext, payload: int) -> int:
        return payload

    delta = Delta()
    hooks.set_enabled(enabled)
    try:
        await app.enqueue_async("om-off", 1)
    finally:
        hooks.set_enabled(True)
    assert delta("rota_runs_enqueued_total", {"queue": "default", "handler": "om-off"}) == 0


def test_run_series_buckets_are_cumulative_and_bounded() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from rota.observe.metrics import OTHER, BoundedNames
    from rota.observe.run_series import RunSeries

    series = RunSeries(BoundedNames(cap=1), BoundedNames(), (1.0, 5.0), (1.0,))
    for seconds in (0.5, 1.0, 3.0, 10.0):
        series.finished("q", "h", "succeeded", seconds)
    series.finished("second-queue", "h", "succeeded", 2.0)  # past the cap: "other"
    series.claimed("q", 0.2)
    series.claimed("q", None)
    series.let_go("q")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(series)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    run = {"queue": "q", "handler": "h", "outcome": "succeeded"}
    assert value("rota_runs_finished_total", **run) == 4
    assert value("rota_run_duration_seconds_bucket", **run, le="1.0") == 2
    assert value("rota_run_duration_seconds_bucket", **run, le="5.0") == 3
    assert value("rota_run_duration_seconds_bucket", **run, le="+Inf") == 4
    assert value("rota_run_duration_seconds_sum", **run) == 14.5
    assert value("rota_run_duration_seconds_count", **run) == 4
    assert value("rota_runs_finished_total", **{**run, "queue": OTHER}) == 1
    assert value("rota_runs_in_flight", queue="q") == 1
    assert value("rota_run_pickup_delay_seconds_count", queue="q") == 1
    assert b"second-queue" not in generate_latest(registry)


async def _minutely_job(make_app, clock, name: str, queue: str):  # type: ignore[no-untyped-def]
    """An app with one handler on ``queue`` and a job every minute: (store, job)."""
    from rota.services import schedules

    app = make_app(clock)

    @app.handler(name, queue=queue)
    async def scheduled(ctx: rota.RunContext, payload: int) -> int:
        return payload

    store = await app.store()
    spec = schedules.job_spec(app.registry, f"{name}-every-minute", name, 1, interval=60)
    return store, await schedules.save_job(store, clock, spec)


async def test_planned_slots_are_counted_with_their_lag(make_app, clock) -> None:
    from datetime import timedelta

    from rota.engine.planner import Planner

    store, _ = await _minutely_job(make_app, clock, "om-scheduled", "om-sched-q")
    delta = Delta()
    # The slot fell due 30 s ago (a leader that was away): planned late, lag 30 s.
    report = await Planner(store, timedelta(seconds=5)).tick(clock.now() + timedelta(seconds=90))
    assert report.runs_created == 1
    assert delta("rota_schedule_slots_planned_total") == 1
    planned = {"queue": "om-sched-q", "handler": "om-scheduled"}
    assert delta("rota_runs_enqueued_total", planned) == 1
    assert delta("rota_schedule_lag_seconds_count") == 1
    assert delta("rota_schedule_lag_seconds_sum") == 30


async def test_a_scheduled_run_is_timed_from_its_slot_to_its_start(make_app, clock) -> None:
    """rota_schedule_start_delay_seconds: the claim hands the worker the run's slot, and
    the handler's start is measured from it (issue 25)."""
    from datetime import timedelta

    from rota.engine.planner import Planner
    from rota.observe import hooks
    from rota.store.port import ClaimRequest

    store, job = await _minutely_job(make_app, clock, "om-on-time", "om-time-q")
    await Planner(store, timedelta(seconds=90)).tick(clock.now())
    slot = job.next_fire_at
    assert slot is not None
    request = ClaimRequest("w", ("om-time-q",), 10, 60.0)
    [claimed] = await store.claim(request, slot + timedelta(milliseconds=3))
    assert claimed.slot_at == slot
    delta = Delta()
    hooks.run_starting(claimed, slot + timedelta(milliseconds=12))
    assert delta("rota_schedule_start_delay_seconds_count") == 1
    assert delta("rota_schedule_start_delay_seconds_sum") == pytest.approx(0.012)
