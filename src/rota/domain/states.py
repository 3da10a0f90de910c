"""Run states and the transitions between them.

The table is the single source of truth: stores write only transitions listed here
(their SQL names the allowed source states), DESIGN.md draws the same table, and a
test checks the two agree. tests/contract/test_store_state_table.py proves the table
true on both stores: every state change a store call makes is listed, and every entry
is made by some store call.
"""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    PENDING = "pending"  # waiting for run_at and a free worker
    CLAIMED = "claimed"  # a worker holds the lease; not yet confirmed started
    RUNNING = "running"  # the worker's heartbeat confirmed the handler is executing
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # the handler declared the failure permanent
    RETRYING = "retrying"  # an attempt failed; the next one is due at run_at
    TIMED_OUT = (
        "timed_out"  # an attempt ran past its timeout and the handler opts out of retrying timeouts
    )
    CANCELLED = "cancelled"  # by an operator, or a start-by deadline passed
    DEAD_LETTERED = "dead_lettered"  # attempts spent (or poison); kept for replay
    WAITING = "waiting"  # a workflow step whose parents have not decided it yet
    SKIPPED = "skipped"  # a workflow step whose trigger rule can no longer be met

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def is_active(self) -> bool:
        """Held by a worker under a lease."""
        return self in ACTIVE_STATES


ACTIVE_STATES = frozenset({RunState.CLAIMED, RunState.RUNNING})
TERMINAL_STATES = frozenset(
    {
        RunState.SUCCEEDED,
        RunState.FAILED,
        RunState.TIMED_OUT,
        RunState.CANCELLED,
        RunState.DEAD_LETTERED,
        RunState.SKIPPED,
    }
)

# (from, to) -> who makes the transition. DESIGN.md renders this table.
TRANSITIONS: dict[tuple[RunState, RunState], str] = {
    (RunState.PENDING, RunState.CLAIMED): "worker claim",
    (RunState.RETRYING, RunState.CLAIMED): "worker claim (retry is due)",
    (RunState.PENDING, RunState.CANCELLED): "operator cancel; leader: start-by deadline passed",
    (RunState.RETRYING, RunState.CANCELLED): "operator cancel",
    # ADR 0016: a run its open breaker holds back, of a handler with when_open="fail".
    (RunState.PENDING, RunState.FAILED): "limited claim: breaker open, handler fails fast",
    (RunState.RETRYING, RunState.FAILED): "limited claim: breaker open, handler fails fast",
    # ADR 0029: a slot run whose job's overlap policy leaves it out when it falls due.
    (RunState.PENDING, RunState.SKIPPED): "limited claim: overlap, previous run still live",
    (RunState.CLAIMED, RunState.RUNNING): "worker heartbeat",
    (RunState.CLAIMED, RunState.SUCCEEDED): "worker completion (fenced)",
    (RunState.RUNNING, RunState.SUCCEEDED): "worker completion (fenced)",
    (RunState.CLAIMED, RunState.RETRYING): "worker completion: attempt failed, budget left",
    (RunState.RUNNING, RunState.RETRYING): "worker completion: attempt failed, budget left",
    (RunState.CLAIMED, RunState.FAILED): "worker completion: PermanentFailure raised",
    (RunState.RUNNING, RunState.FAILED): "worker completion: PermanentFailure raised",
    (RunState.CLAIMED, RunState.TIMED_OUT): "worker completion: timeout, retry_timeouts=False",
    (RunState.RUNNING, RunState.TIMED_OUT): "worker completion: timeout, retry_timeouts=False",
    (RunState.CLAIMED, RunState.CANCELLED): "worker, reaper or release after a cancel request",
    (RunState.RUNNING, RunState.CANCELLED): "worker, reaper or release after a cancel request",
    (RunState.CLAIMED, RunState.DEAD_LETTERED): "worker completion: attempts spent",
    (RunState.RUNNING, RunState.DEAD_LETTERED): "worker completion: attempts spent; reaper: poison",
    (RunState.CLAIMED, RunState.PENDING): "worker release on shutdown; reaper: lease expired",
    (RunState.RUNNING, RunState.PENDING): "worker release on shutdown; reaper: lease expired",
    # Workflow steps (domain/workflows.py), decided in the transaction that finished
    # the parent (a completion, the reaper, a cancel), under the parent's fence.
    (RunState.WAITING, RunState.PENDING): "workflow release: the step's trigger rule is met",
    (RunState.WAITING, RunState.SKIPPED): "workflow release: the trigger rule cannot be met",
    (RunState.WAITING, RunState.SUCCEEDED): "workflow release: every map item succeeded",
    (RunState.WAITING, RunState.FAILED): "workflow release: a map item failed, or no list",
    (RunState.WAITING, RunState.CANCELLED): "workflow cancel",
    (RunState.SKIPPED, RunState.WAITING): "replay of a workflow step: descendants rejoin",
    (RunState.FAILED, RunState.WAITING): "replay of a map item: its map reopens",
}

# Replay never moves a run: it creates a fresh Pending run linked by replay_of.
REPLAYABLE_STATES = frozenset(
    {RunState.DEAD_LETTERED, RunState.FAILED, RunState.TIMED_OUT, RunState.CANCELLED}
)


class AttemptOutcome(StrEnum):
    """How one attempt ended. Exactly one is recorded per attempt (per fence)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    LOST = "lost"  # the lease expired: the worker died, stalled or lost its connection
    RELEASED = "released"  # the worker shut down and handed the run back
    # The database could not be reached during the attempt (not the handler's fault):
    # the run is retried and the attempt is given back, not spent.
    INFRASTRUCTURE = "infrastructure"
