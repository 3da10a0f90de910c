"""Running one claimed run: call the handler under its timeout and cancellation signal,
and turn whatever happened into an Outcome value. No store writes happen here."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from rota.context import RunContext, RunLogger
from rota.domain.retry import DEFAULT_POLICY, GiveUp, decide
from rota.domain.runs import ClaimedRun, Outcome, encode_json
from rota.domain.states import AttemptOutcome, RunState
from rota.errors import InvalidArgument, PermanentFailure, StoreUnavailable
from rota.handlers import HandlerSpec

log = structlog.get_logger("rota.engine.execution")
# An attempt the database failed is retried after this long, whatever the handler's
# retry policy says (the policy is about the handler's own failures).
INFRASTRUCTURE_RETRY_SECONDS = 1.0
# A handler without a timeout runs in no timeout scope at all: asyncio.timeout(None)
# still builds and enters one per run. nullcontext holds no state, so one serves all.
_NO_TIMEOUT: contextlib.nullcontext[None] = contextlib.nullcontext()


@dataclass
class Finished:
    outcome: Outcome
    # A sync handler that outlived its timeout or cancellation still holds its thread;
    # the slot stays taken until this future resolves.
    straggler: asyncio.Future[Any] | None = None


def run_context(
    claimed: ClaimedRun,
    worker_id: str,
    now: Callable[[], datetime],
    open_transaction: Callable[[], Any] | None = None,
) -> RunContext:
    """The context ``claimed``'s handler is called with, by a worker and by
    rota.testing's drain alike: the run's idempotency key (or one made of its id), a
    log reading ``now``, and ``open_transaction`` for ``ctx.transaction()``, if any."""
    return RunContext(
        run_id=claimed.run_id,
        handler=claimed.handler,
        queue=claimed.queue,
        attempt=claimed.attempt,
        max_attempts=claimed.max_attempts,
        fence=claimed.fence,
        idempotency_key=claimed.idempotency_key or f"rota-run-{claimed.run_id}",
        worker_id=worker_id,
        log=RunLogger(claimed, now),
        _open_transaction=open_transaction,
        _step_input=claimed.step_input,
    )


def _error_text(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[:4000]


def failure_outcome(
    spec: HandlerSpec | None,
    claimed: ClaimedRun,
    attempt_outcome: AttemptOutcome,
    error: str,
) -> Outcome:
    """Retry or give up, by the handler's policy (the default policy if unknown here)."""
    policy = spec.retry if spec else DEFAULT_POLICY
    decision = decide(policy, claimed.attempt, claimed.max_attempts)
    if isinstance(decision, GiveUp):
        return outcome_of(
            claimed, RunState.DEAD_LETTERED, attempt_outcome, error=f"{error} ({decision.reason})"
        )
    return outcome_of(
        claimed, RunState.RETRYING, attempt_outcome, error=error, retry_delay=decision.delay
    )


def outcome_of(
    claimed: ClaimedRun, state: RunState, attempt_outcome: AttemptOutcome, **fields: Any
) -> Outcome:
    """The outcome of ``claimed``'s attempt; it says whether the run is a workflow step
    (every step carries its step input), which decides how the store writes it."""
    return Outcome(
        claimed.run_id,
        claimed.fence,
        state,
        attempt_outcome,
        workflow_step=claimed.step_input is not None,
        **fields,
    )


async def execute(
    spec: HandlerSpec | None,
    claimed: ClaimedRun,
    ctx: RunContext,
    threads: Executor,
) -> Finished:
    """Call the handler in the current task, under its timeout.

    The worker asks a run to stop by setting ``ctx.cancelled`` (cooperative); if the
    handler has not returned after the grace period, it cancels this task, which ends
    the attempt Cancelled here. A cancellation nobody asked for propagates.
    """
    if spec is None:
        return Finished(
            failure_outcome(
                None,
                claimed,
                AttemptOutcome.FAILED,
                f"handler {claimed.handler!r} is not registered on this worker",
            )
        )
    thread: asyncio.Future[Any] | None = None
    scope = asyncio.timeout(spec.timeout) if spec.timeout is not None else None
    try:
        async with scope if scope is not None else _NO_TIMEOUT:
            if spec.is_async:
                result = await spec.fn(ctx, claimed.payload)
            else:
                # A copy of the context: the handler's own spans (and log context) in
                # its thread belong to this attempt, as they do for async handlers.
                thread = asyncio.get_running_loop().run_in_executor(
                    threads, contextvars.copy_context().run, spec.fn, ctx, claimed.payload
                )
                # shield: giving up on the wait must not mark the thread's future done;
                # the worker watches it to know when the thread really returns.
                result = await asyncio.shield(thread)
    except TimeoutError as exc:
        # Raised by the handler itself (its own wait_for, a socket's timeout), not by
        # its time running out: a failure like any other.
        if scope is None or not scope.expired():
            return Finished(_raised(spec, claimed, ctx, exc))
        ctx.cancelled.set()
        error = f"timed out after {spec.timeout:g} s"
        if spec.retry_timeouts:
            outcome = failure_outcome(spec, claimed, AttemptOutcome.TIMED_OUT, error)
        else:
            outcome = _final(claimed, RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT, error)
        return Finished(outcome, _still_running(thread))
    except asyncio.CancelledError:
        if not ctx.is_cancelled():
            raise
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # the cancellation was ours and ends here, as an outcome
        return Finished(_cancelled(claimed), _still_running(thread))
    except PermanentFailure as exc:
        return Finished(_final(claimed, RunState.FAILED, AttemptOutcome.FAILED, _error_text(exc)))
    except Exception as exc:  # noqa: BLE001 - a handler may raise anything; each is an outcome
        return Finished(_raised(spec, claimed, ctx, exc))
    if ctx.is_cancelled():  # the handler saw ctx.cancelled and returned early
        return Finished(_cancelled(claimed))
    try:
        result_json = None if result is None else encode_json("result", result)
    except InvalidArgument as exc:
        return Finished(failure_outcome(spec, claimed, AttemptOutcome.FAILED, str(exc)))
    return Finished(
        outcome_of(claimed, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED, result_json=result_json)
    )


def _raised(spec: HandlerSpec, claimed: ClaimedRun, ctx: RunContext, exc: Exception) -> Outcome:
    """The outcome of a handler that raised: retried soon without spending an attempt if
    the database failed it, else by the handler's retry policy."""
    if is_infrastructure_failure(exc, ctx):
        return infrastructure_outcome(claimed, exc)
    return failure_outcome(spec, claimed, AttemptOutcome.FAILED, _error_text(exc))


def is_infrastructure_failure(exc: BaseException, ctx: RunContext) -> bool:
    """Did the attempt fail because the database could not be reached, rather than
    because of the handler? Yes when the store said so (StoreUnavailable, also when the
    handler wrapped it), or when the connection of the handler's transaction broke
    (the driver's error is the handler's to see; the store judges it)."""
    seen: BaseException | None = exc
    for _ in range(10):  # a short walk along the causes, never a cycle
        if seen is None:
            break
        if isinstance(seen, StoreUnavailable):
            return True
        seen = seen.__cause__ or seen.__context__
    transaction = ctx._transaction
    return transaction is not None and bool(transaction.broke_under(exc))


def infrastructure_outcome(claimed: ClaimedRun, exc: BaseException) -> Outcome:
    """Retry soon, and give the attempt back (the store does, for this outcome)."""
    return outcome_of(
        claimed,
        RunState.RETRYING,
        AttemptOutcome.INFRASTRUCTURE,
        error=f"infrastructure (attempt not counted): {_error_text(exc)}",
        retry_delay=INFRASTRUCTURE_RETRY_SECONDS,
    )


def _cancelled(claimed: ClaimedRun) -> Outcome:
    return _final(claimed, RunState.CANCELLED, AttemptOutcome.CANCELLED, "cancelled by request")


def _final(claimed: ClaimedRun, state: RunState, outcome: AttemptOutcome, error: str) -> Outcome:
    return outcome_of(claimed, state, outcome, error=error)


def _still_running(future: asyncio.Future[Any] | None) -> asyncio.Future[Any] | None:
    return future if future is not None and not future.done() else None
