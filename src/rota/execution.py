"""Running one claimed run: call the handler under its timeout and cancellation signal,
and turn whatever happened into an Outcome value. No store writes happen here."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import structlog

from rota.context import RunContext
from rota.domain.retry import DEFAULT_POLICY, GiveUp, decide
from rota.domain.runs import ClaimedRun, Outcome, encode_json
from rota.domain.states import AttemptOutcome, RunState
from rota.errors import InvalidArgument, PermanentFailure
from rota.handlers import HandlerSpec

log = structlog.get_logger("rota.execution")


class CancelRequested(Exception):
    """Raised inside our own waiting when an operator cancelled the run."""


@dataclass
class Finished:
    outcome: Outcome
    # A sync handler that outlived its timeout or cancellation still holds its thread;
    # the slot stays taken until this future resolves.
    straggler: asyncio.Future[Any] | None = None


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
        return Outcome(
            claimed.run_id,
            claimed.fence,
            RunState.DEAD_LETTERED,
            attempt_outcome,
            error=f"{error} ({decision.reason})",
        )
    return Outcome(
        claimed.run_id,
        claimed.fence,
        RunState.RETRYING,
        attempt_outcome,
        error=error,
        retry_delay=decision.delay,
    )


async def execute(
    spec: HandlerSpec | None,
    claimed: ClaimedRun,
    ctx: RunContext,
    threads: Executor,
    cancel_requested: asyncio.Event,
    cancel_grace: float,
) -> Finished:
    if spec is None:
        return Finished(
            failure_outcome(
                None,
                claimed,
                AttemptOutcome.FAILED,
                f"handler {claimed.handler!r} is not registered on this worker",
            )
        )
    call = _async_call(spec, ctx, claimed) if spec.is_async else None
    straggler: asyncio.Future[Any] | None = None
    if call is None:
        straggler = asyncio.get_running_loop().run_in_executor(
            threads, spec.fn, ctx, claimed.payload
        )
        call = _await_future(straggler)
    try:
        result = await _supervise(call, spec.timeout, ctx, cancel_requested, cancel_grace)
    except TimeoutError:
        ctx.cancelled.set()
        error = f"timed out after {spec.timeout:g} s"
        if spec.retry_timeouts:
            outcome = failure_outcome(spec, claimed, AttemptOutcome.TIMED_OUT, error)
        else:
            outcome = _final(claimed, RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT, error)
        return Finished(outcome, _still_running(straggler))
    except CancelRequested:
        outcome = _final(
            claimed, RunState.CANCELLED, AttemptOutcome.CANCELLED, "cancelled by request"
        )
        return Finished(outcome, _still_running(straggler))
    except PermanentFailure as exc:
        return Finished(_final(claimed, RunState.FAILED, AttemptOutcome.FAILED, _error_text(exc)))
    except Exception as exc:  # noqa: BLE001 - a handler may raise anything; each is an outcome
        return Finished(failure_outcome(spec, claimed, AttemptOutcome.FAILED, _error_text(exc)))
    if cancel_requested.is_set():  # the handler saw ctx.cancelled and returned early
        outcome = _final(
            claimed, RunState.CANCELLED, AttemptOutcome.CANCELLED, "cancelled by request"
        )
        return Finished(outcome)
    try:
        result_json = None if result is None else encode_json("result", result)
    except InvalidArgument as exc:
        return Finished(failure_outcome(spec, claimed, AttemptOutcome.FAILED, str(exc)))
    return Finished(
        Outcome(
            claimed.run_id,
            claimed.fence,
            RunState.SUCCEEDED,
            AttemptOutcome.SUCCEEDED,
            result_json=result_json,
        )
    )


def _final(claimed: ClaimedRun, state: RunState, outcome: AttemptOutcome, error: str) -> Outcome:
    return Outcome(claimed.run_id, claimed.fence, state, outcome, error=error)


def _still_running(future: asyncio.Future[Any] | None) -> asyncio.Future[Any] | None:
    return future if future is not None and not future.done() else None


async def _async_call(spec: HandlerSpec, ctx: RunContext, claimed: ClaimedRun) -> Any:
    return await spec.fn(ctx, claimed.payload)


async def _await_future(future: asyncio.Future[Any]) -> Any:
    # shield: cancelling our wait must not "cancel" the thread's future, which we keep
    # watching to know when the thread is really done.
    return await asyncio.shield(future)


async def _supervise(
    call: Awaitable[Any],
    timeout: float | None,
    ctx: RunContext,
    cancel_requested: asyncio.Event,
    cancel_grace: float,
) -> Any:
    """Run ``call`` until it returns, its timeout passes, or a cancel request wins.

    A cancel request first sets ``ctx.cancelled`` (cooperative), then, after
    ``cancel_grace`` seconds, cancels the task (async handlers stop at their next await).
    """
    task: asyncio.Task[Any] = asyncio.ensure_future(call)
    canceller = asyncio.create_task(
        _cancel_after_request(task, ctx, cancel_requested, cancel_grace)
    )
    try:
        async with asyncio.timeout(timeout):
            return await task
    except asyncio.CancelledError:
        if canceller.done() and not canceller.cancelled() and canceller.result():
            raise CancelRequested from None
        raise
    finally:
        canceller.cancel()
        if not task.done():
            task.cancel()


async def _cancel_after_request(
    task: asyncio.Task[Any],
    ctx: RunContext,
    cancel_requested: asyncio.Event,
    grace: float,
) -> bool:
    await cancel_requested.wait()
    ctx.cancelled.set()
    done, _ = await asyncio.wait({task}, timeout=grace)
    if not done:
        task.cancel()
    return True
