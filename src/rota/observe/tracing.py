"""OpenTelemetry traces, with the optional extra ``rota[otel]``.

Off unless asked for (``ROTA_TRACING=on``, or :func:`enable` from code), and then free:
every function here returns at its first line, nothing is imported from OpenTelemetry
on the hot path, and no span object is made.

When on, a trace runs from the web request through the enqueue to the attempt and
whatever spans the handler makes itself:

- the HTTP API continues a caller's ``traceparent`` in a SERVER span per request;
- an enqueue is a PRODUCER span ``send``; the W3C trace context active in it is stored
  with each run (``rota_runs.trace_context``);
- each attempt is a CONSUMER span ``process <queue>`` whose parent is that stored
  context, so every attempt of a run (retries) sits in the enqueue's trace, and a replay,
  which copies the context of the run it repeats, joins the same trace. The handler
  runs inside it (sync handlers too: their thread gets a copy of the context).

Attributes follow OpenTelemetry's messaging conventions where they fit
(``messaging.system``, ``messaging.operation.type``, ``messaging.destination.name``,
``messaging.message.id``, ``messaging.client.id``) plus ``rota.*`` ones for the attempt,
fence, handler and outcome. Never a payload, never an error text.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from rota.domain.runs import ClaimedRun, NewRun

T = TypeVar("T")
log = structlog.get_logger("rota.observe.tracing")
SYSTEM = "rota"
FAILED_STATES = frozenset({"failed", "timed_out", "dead_lettered"})


@dataclass
class _State:
    tracer: Tracer | None = None


_STATE = _State()


def enable(tracer_provider: TracerProvider | None = None) -> bool:
    """Trace with ``tracer_provider`` (default: OpenTelemetry's global one, which the
    application configures with its exporter). False, with a warning, when the
    ``rota[otel]`` extra is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        log.warning("tracing asked for, but OpenTelemetry is not installed: pip install rota[otel]")
        return False
    from rota._version import __version__

    provider = tracer_provider or trace.get_tracer_provider()
    _STATE.tracer = provider.get_tracer("rota", __version__)
    return True


def disable() -> None:
    _STATE.tracer = None


def enabled() -> bool:
    return _STATE.tracer is not None


def stamp_and_send(
    runs: Sequence[NewRun],
) -> contextlib.AbstractContextManager[Sequence[NewRun]]:
    """A PRODUCER span around an enqueue; yields the runs stamped with its context.
    Untraced, the runs pass as they are: a bulk enqueue's RunBatch stays unread until
    the store reads it."""
    if _STATE.tracer is None:
        return contextlib.nullcontext(runs)
    return _sending(_STATE.tracer, runs)


@contextlib.contextmanager
def _sending(tracer: Tracer, runs: Sequence[NewRun]) -> Iterator[Sequence[NewRun]]:
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    queues = sorted({run.queue for run in runs})
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.batch.message_count": len(runs),
    }
    if len(queues) == 1:
        attributes["messaging.destination.name"] = queues[0]
    with tracer.start_as_current_span(
        f"send {queues[0]}" if len(queues) == 1 else "send",
        kind=SpanKind.PRODUCER,
        attributes=attributes,
    ):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        context = carrier.get("traceparent")
        yield [
            run if run.trace_context is not None else replace(run, trace_context=context)
            for run in runs
        ]


def processing(
    work: Awaitable[T], run: ClaimedRun, worker_id: str, outcome_of: Any = None
) -> Awaitable[T]:
    """``work`` (one attempt), to be awaited inside a CONSUMER span continuing the run's
    trace; ``work`` itself when tracing is off (not even a coroutine frame is added).
    ``outcome_of(result)``: the outcome's state name, recorded on the span."""
    if _STATE.tracer is None:
        return work
    return _processing(_STATE.tracer, work, run, worker_id, outcome_of)


async def _processing(
    tracer: Tracer, work: Awaitable[T], run: ClaimedRun, worker_id: str, outcome_of: Any
) -> T:
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind, StatusCode

    parent = propagate.extract({"traceparent": run.trace_context}) if run.trace_context else None
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": run.queue,
        "messaging.message.id": str(run.run_id),
        "messaging.client.id": worker_id,
        "rota.handler": run.handler,
        "rota.run.attempt": run.attempt,
        "rota.run.max_attempts": run.max_attempts,
        "rota.run.fence": run.fence,
    }
    if run.job_id is not None:
        attributes["rota.job.id"] = run.job_id
    with tracer.start_as_current_span(
        f"process {run.queue}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    ) as span:
        result = await work
        _record_outcome(span, outcome_of(result) if outcome_of else None, StatusCode.ERROR)
        return result


def _record_outcome(span: Span, state: str | None, error: Any) -> None:
    if state is None:
        return
    span.set_attribute("rota.run.outcome", state)
    if state in FAILED_STATES:
        span.set_status(error, f"attempt ended {state}")


@contextlib.contextmanager
def serving_request(scope: Mapping[str, Any]) -> Iterator[Span | None]:
    """A SERVER span per HTTP request (an ASGI scope), continuing the caller's
    ``traceparent``."""
    if _STATE.tracer is None:
        yield None
        return
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    method = str(scope["method"])
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}

    with _STATE.tracer.start_as_current_span(
        method,
        context=propagate.extract(headers),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": method},
    ) as span:
        yield span


def name_request(span: Span | None, method: str, route: str, status: int) -> None:
    if span is None:
        return
    span.update_name(f"{method} {route}")
    span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)


if os.environ.get("ROTA_TRACING", "off").lower() in {"1", "on", "true", "yes"}:
    enable()
