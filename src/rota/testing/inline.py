"""Call one handler directly, as a unit test would: no store, no run, no retry. What
the handler returns is returned, what it raises is raised, so a test asserts on it the
way it would on any function."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rota.context import RunContext, RunLogger
from rota.domain.runs import ClaimedRun
from rota.errors import UnsupportedFeature

if TYPE_CHECKING:
    from rota.app import App

# Inline calls are not runs: they get ids no store would hand out, so a handler that
# writes ctx.run_id somewhere cannot be mistaken for a real run's.
_INLINE_IDS = itertools.count(-1, -1)


def call(app: App, handler: str, payload: Any = None, *, attempt: int = 1) -> Any:
    """Call ``handler``'s function with a test context and ``payload``; its return value.
    From async code, use :func:`call_async` (an async handler needs the running loop)."""
    spec = app.registry.require(handler)
    ctx = inline_context(app, handler, payload, attempt)
    if not spec.is_async:
        return spec.fn(ctx, payload)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(spec.fn(ctx, payload))
    raise UnsupportedFeature(
        f"handler {handler!r} is async and a loop is running here: "
        "use `await rota.testing.call_async(...)`"
    )


async def call_async(app: App, handler: str, payload: Any = None, *, attempt: int = 1) -> Any:
    """:func:`call` from async code; a plain handler runs in a thread, as on a worker."""
    spec = app.registry.require(handler)
    ctx = inline_context(app, handler, payload, attempt)
    if spec.is_async:
        return await spec.fn(ctx, payload)
    return await asyncio.to_thread(spec.fn, ctx, payload)


def inline_context(app: App, handler: str, payload: Any, attempt: int = 1) -> RunContext:
    """A RunContext for a call outside any run: a negative run id, fence 0, and a log
    whose lines stay in memory (``ctx.log.take()`` reads them)."""
    spec = app.registry.require(handler)
    run_id = next(_INLINE_IDS)
    claimed = ClaimedRun(
        run_id=run_id,
        handler=handler,
        payload=payload,
        queue=spec.queue,
        attempt=attempt,
        max_attempts=spec.max_attempts,
        fence=0,
        timeout=spec.timeout,
        lost_count=0,
        idempotency_key=None,
        lease_expires_at=datetime.max.replace(tzinfo=UTC),
    )
    return RunContext(
        run_id=run_id,
        handler=handler,
        queue=spec.queue,
        attempt=attempt,
        max_attempts=spec.max_attempts,
        fence=0,
        idempotency_key=f"rota-inline-{-run_id}",
        worker_id="rota-testing-inline",
        log=RunLogger(claimed, app.clock.now),
    )
