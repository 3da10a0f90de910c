"""How a run that leaves a worker's hands settles: the rules both stores apply.

Pure functions, stated once. The reaper's verdict and every error text a store writes
are decided here in Python; the store only writes them (fenced). Two rules must be
read in the same statement that writes the run, so they stay in SQL for atomicity and
are stated here once; one contract test (tests/contract/test_store_settle.py) holds
both dialects to these functions:

* a cancel request outranks a retry (:func:`completed_state`, :func:`released_state`);
* a retry keeps its priority boost: ``sort_at`` moves with ``run_at``
  (:func:`retry_sort_at`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rota.domain.states import RunState

CANCELLED_WAITING = "cancelled by request"
RELEASED_ATTEMPT = "worker shut down before the run finished"
CANCELLED_WHILE_LOST = "cancelled by request (its worker was lost before it stopped)"


@dataclass(frozen=True)
class Reaped:
    """What becomes of a run whose lease expired: its next state, the error it keeps
    (None: the one it had), and what its lost attempt records."""

    state: RunState
    error: str | None
    attempt_error: str


def reap_verdict(
    *,
    cancel_requested: bool,
    lost_count: int,
    attempt: int,
    max_attempts: int,
    poison_after: int,
    worker_id: str | None,
) -> Reaped:
    """A run someone asked to cancel stays cancelled; a run that lost its worker
    ``poison_after`` times in a row is poison and dead-lettered, as is one whose last
    attempt was spent; the rest go back to pending (the attempt counts)."""
    worker = worker_id or "?"
    attempt_error = f"lease expired: worker {worker} stopped renewing it"
    losses = lost_count + 1
    if cancel_requested:
        return Reaped(RunState.CANCELLED, CANCELLED_WHILE_LOST, attempt_error)
    if losses >= poison_after:
        error = f"poison: lost its worker {losses} times in a row"
        return Reaped(RunState.DEAD_LETTERED, error, attempt_error)
    if attempt >= max_attempts:
        error = f"lease expired on the last attempt (worker {worker})"
        return Reaped(RunState.DEAD_LETTERED, error, attempt_error)
    return Reaped(RunState.PENDING, None, attempt_error)


def deadline_error(deadline: datetime) -> str:
    """Why a run never started: its start-by deadline passed (it is cancelled)."""
    return f"deadline_exceeded: not started by {deadline.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


GIVES_WAY_TO_CANCEL = frozenset({RunState.RETRYING, RunState.SUCCEEDED})


def completed_state(requested: RunState, cancel_requested: bool) -> RunState:
    """The state a completion writes: a cancel request outranks a retry (the run is not
    tried again) and a success (a handler that returned before its worker learned of the
    cancel: a cancel acknowledged by the API always holds); a failure stands. Stated in
    SQL too (``complete``)."""
    if requested in GIVES_WAY_TO_CANCEL and cancel_requested:
        return RunState.CANCELLED
    return requested


def released_state(cancel_requested: bool) -> RunState:
    """A run handed back on shutdown is claimable again, unless cancel was asked for.
    Stated in SQL too (``release``)."""
    return RunState.CANCELLED if cancel_requested else RunState.PENDING


def retry_sort_at(now: datetime, delay: timedelta, run_at: datetime, sort_at: datetime) -> datetime:
    """A retry is due at ``now + delay`` (the database's now); its ``sort_at`` keeps the
    same lead over ``run_at`` that its priority gave it. Stated in SQL too (``complete``)."""
    return now + delay - (run_at - sort_at)
