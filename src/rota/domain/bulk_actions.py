"""Bulk actions on the runs a filter matches: which actions there are and which states
each may act on (issue 29). Pure: the walk itself is rota.services.bulk_actions.

An action's states narrow the filter: ``cancel`` with no state filter counts and
touches only live runs, ``delete`` only finished ones. A state filter naming a state
the action cannot act on is refused before anything is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rota.domain.states import REPLAYABLE_STATES, TERMINAL_STATES, RunState
from rota.domain.values import one_of
from rota.errors import InvalidArgument

# Runs per batch: one keyset read of at most this many ids, then the action on them (one
# statement for delete). Small enough that no transaction grows with the action.
BATCH_SIZE = 500


class BulkAction(StrEnum):
    CANCEL = "cancel"  # live runs: a waiting one is cancelled, a held one asked to stop
    REQUEUE = "requeue"  # finished unsuccessful runs: each gets a fresh run (as requeue)
    REPLAY = "replay"  # dead-lettered runs: each gets a fresh run (as the DLQ's replay)
    DELETE = "delete"  # finished runs, with their attempts and logs; never workflow steps


ACTION_STATES: dict[BulkAction, frozenset[RunState]] = {
    BulkAction.CANCEL: frozenset(set(RunState) - TERMINAL_STATES),
    BulkAction.REQUEUE: REPLAYABLE_STATES,
    BulkAction.REPLAY: frozenset({RunState.DEAD_LETTERED}),
    BulkAction.DELETE: TERMINAL_STATES,
}


def parse_action(value: object) -> BulkAction:
    """``value`` as an action, or an error naming every action there is."""
    return one_of("action", BulkAction, value)


def action_states(action: BulkAction, asked: Sequence[RunState]) -> tuple[RunState, ...]:
    """The states the action walks: those asked for (all the action allows when none
    are), in a stable order; a state the action cannot act on is an error naming the
    states it can."""
    allowed = ACTION_STATES[action]
    outside = [state for state in asked if state not in allowed]
    if outside:
        names = ", ".join(sorted(state.value for state in allowed))
        raise InvalidArgument("state", outside[0].value, f"for {action.value}, one of {names}")
    chosen = set(asked) or allowed
    return tuple(sorted(chosen, key=lambda state: state.value))


@dataclass(frozen=True)
class BulkPreview:
    """What an action would touch now: ``count`` runs, the newest of them ``top_id``
    (None when none match). The action walks ids up to ``top_id`` only."""

    action: BulkAction
    count: int
    top_id: int | None


@dataclass(frozen=True)
class BulkResult:
    """What an action did. ``matched``: the runs counted when it began. ``affected``:
    the runs it changed. ``skipped``: those counted that it did not change, because
    their state no longer allowed it (a run that finished meanwhile, a workflow step
    for delete) or they no longer matched the filter when the walk reached them."""

    action: BulkAction
    matched: int
    affected: int
    skipped: int
    batches: int


def skipped_count(matched: int, affected: int, refused: int) -> int:
    """Runs counted at the start and not changed: those the walk reached and the action
    refused, plus those it never reached (they left the filter before it came). Runs
    that joined the filter below the walk's top are acted on, so they can make up for
    ones that left; the count never goes below the refusals."""
    return refused + max(0, matched - affected - refused)
