"""OpenTelemetry traces, recorded with the SDK's in-memory exporter: one trace runs from
the HTTP request that enqueued (continuing the caller's traceparent) through the
enqueue and the attempt to the handler's own span; retries stay in the trace; with
tracing off nothing is stamped. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import rota
from rota.asgi import create_api
from rota.domain.states import RunState
from rota.observe import tracing
from rota.services import runs as run_service
from rota.services import schedules
from tests.api.conftest import api_settings, serving
from tests.api.conftest import auth as auth
from tests.engine.conftest import working
from tests.helpers import eventually
from tests.waiting import wait_for_state


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert tracing.enable(provider)
    try:
        yield provider, exporter
    finally:
        tracing.disable()


def _by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


async def test_one_trace_from_an_http_enqueue_to_the_handlers_span(make_app, spans, auth) -> None:
    provider, exporter = spans
    app = make_app()
    handler_tracer = provider.get_tracer("the-users-code")

    @app.handler("traced")
    async def traced(ctx: rota.RunContext, payload: int) -> int:
        with handler_tracer.start_as_current_span("handler work"):
            return payload

    store = await app.store()
    job_spec = schedules.job_spec(app.registry, "traced-job", "traced", 1)
    await schedules.save_job(store, app.clock, job_spec)
    api = create_api(app, api_settings())
    caller = provider.get_tracer("the-caller")
    async with serving(api) as client, working(app, node_id="tr-w1"):
        with caller.start_as_current_span("caller") as caller_span:
            carrier: dict[str, str] = {}
            from opentelemetry import propagate

            propagate.inject(carrier)
            response = await client.post(
                "/api/v1/jobs/traced-job/trigger",
                headers={**auth(), "traceparent": carrier["traceparent"]},
            )
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        await wait_for_state(store, run_id, RunState.SUCCEEDED)
        await eventually(
            lambda: _async("handler work" in _by_name(exporter)), what="the handler's span"
        )

    found = _by_name(exporter)
    [server] = found["POST /api/v1/jobs/{name}/trigger"]
    [send] = found["send default"]
    [process] = found["process default"]
    [work] = found["handler work"]
    trace_id = caller_span.get_span_context().trace_id
    assert {s.context.trace_id for s in (server, send, process, work)} == {trace_id}
    assert server.parent is not None
    assert server.parent.span_id == caller_span.get_span_context().span_id
    assert send.parent is not None
    assert send.parent.span_id == server.context.span_id
    assert process.parent is not None
    assert process.parent.span_id == send.context.span_id
    assert work.parent is not None
    assert work.parent.span_id == process.context.span_id
    assert server.kind is SpanKind.SERVER
    assert send.kind is SpanKind.PRODUCER
    assert process.kind is SpanKind.CONSUMER
    attributes = dict(process.attributes or {})
    assert attributes["messaging.system"] == "rota"
    assert attributes["messaging.operation.type"] == "process"
    assert attributes["messaging.destination.name"] == "default"
    assert attributes["messaging.message.id"] == str(run_id)
    assert attributes["rota.handler"] == "traced"
    assert attributes["rota.run.attempt"] == 1
    assert attributes["rota.run.fence"] == 1
    assert attributes["rota.run.outcome"] == "succeeded"
    assert attributes["messaging.client.id"] == "tr-w1"


async def test_retries_and_sync_handlers_stay_in_the_enqueues_trace(make_app, spans) -> None:
    provider, exporter = spans
    app = make_app()
    tracer = provider.get_tracer("the-users-code")

    @app.handler("flaky-sync", max_attempts=2, retry=rota.retry.Fixed(0.01))
    def flaky(ctx: rota.RunContext, payload: int) -> int:
        with tracer.start_as_current_span(f"sync attempt {ctx.attempt}"):
            if ctx.attempt == 1:
                raise RuntimeError("first attempt fails")
            return payload

    store = await app.store()
    async with working(app, node_id="tr-w2"):
        with tracer.start_as_current_span("script"):
            run_id = await app.enqueue_async("flaky-sync", 5)
        await wait_for_state(store, run_id, RunState.SUCCEEDED)
        await eventually(
            lambda: _async(len(_by_name(exporter).get("process default", [])) == 2),
            what="both attempts' spans",
        )
    found = _by_name(exporter)
    [send] = found["send default"]
    attempts = sorted(found["process default"], key=lambda s: s.attributes["rota.run.attempt"])
    assert [s.parent.span_id for s in attempts if s.parent] == [send.context.span_id] * 2
    assert attempts[0].attributes["rota.run.outcome"] == "retrying"
    assert attempts[1].attributes["rota.run.outcome"] == "succeeded"
    [inner] = found["sync attempt 2"]
    assert inner.parent is not None
    assert inner.parent.span_id == attempts[1].context.span_id
    run = await store.get_run(run_id)
    assert run is not None
    assert run.trace_context is not None
    assert f"{send.context.trace_id:032x}" in run.trace_context


async def test_with_tracing_off_nothing_is_stamped(make_app) -> None:
    assert not tracing.enabled()
    app = make_app()

    @app.handler("untraced")
    async def untraced(ctx: rota.RunContext, payload: int) -> int:
        return payload

    with trace.get_tracer("x").start_as_current_span("ignored"):
        run_id = await app.enqueue_async("untraced", 1)
    run = await (await app.store()).get_run(run_id)
    assert run is not None
    assert run.trace_context is None


async def _async(value: bool) -> bool:
    return value


async def test_a_replay_joins_the_trace_of_the_run_it_repeats(make_app, spans) -> None:
    provider, exporter = spans
    app = make_app()
    fail = {"on": True}

    @app.handler("replayed", max_attempts=1)
    async def replayed(ctx: rota.RunContext, payload: int) -> int:
        if fail["on"]:
            raise RuntimeError("broken until fixed")
        return payload

    store = await app.store()
    async with working(app, node_id="tr-w3"):
        with provider.get_tracer("script").start_as_current_span("script"):
            run_id = await app.enqueue_async("replayed", 1)
        await wait_for_state(store, run_id, RunState.DEAD_LETTERED)
        fail["on"] = False
        replay_id = await run_service.replay(store, app.clock, run_id)
        await wait_for_state(store, replay_id, RunState.SUCCEEDED)
        await eventually(
            lambda: _async(len(_by_name(exporter).get("process default", [])) == 2),
            what="both runs' spans",
        )
    found = _by_name(exporter)
    [send] = found["send default"]
    first, again = sorted(found["process default"], key=lambda s: s.start_time or 0)
    assert first.attributes["messaging.message.id"] == str(run_id)
    assert again.attributes["messaging.message.id"] == str(replay_id)
    assert again.context.trace_id == send.context.trace_id
    assert again.parent is not None
    assert again.parent.span_id == send.context.span_id
