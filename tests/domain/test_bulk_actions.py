"""The bulk actions' table: which states each may touch, and how skipped runs add up."""

from __future__ import annotations

import pytest

from rota.domain.bulk_actions import (
    ACTION_STATES,
    BulkAction,
    action_states,
    parse_action,
    skipped_count,
)
from rota.domain.states import REPLAYABLE_STATES, TERMINAL_STATES, RunState
from rota.errors import InvalidArgument


def test_each_action_touches_the_states_its_single_run_form_does() -> None:
    assert ACTION_STATES[BulkAction.CANCEL] == {s for s in RunState if not s.is_terminal}
    assert ACTION_STATES[BulkAction.REQUEUE] == REPLAYABLE_STATES
    assert ACTION_STATES[BulkAction.REPLAY] == {RunState.DEAD_LETTERED}
    assert ACTION_STATES[BulkAction.DELETE] == TERMINAL_STATES


def test_no_state_asked_means_every_state_the_action_allows() -> None:
    assert action_states(BulkAction.REPLAY, ()) == (RunState.DEAD_LETTERED,)
    asked = (RunState.RUNNING, RunState.PENDING, RunState.PENDING)
    assert action_states(BulkAction.CANCEL, asked) == (RunState.PENDING, RunState.RUNNING)


def test_a_state_outside_the_action_is_named_with_the_allowed_ones() -> None:
    with pytest.raises(InvalidArgument) as raised:
        action_states(BulkAction.DELETE, (RunState.FAILED, RunState.PENDING))
    assert (raised.value.name, raised.value.value) == ("state", "pending")
    assert raised.value.allowed.startswith("for delete, one of cancelled, dead_lettered")


def test_an_unknown_action_names_every_action() -> None:
    assert parse_action("replay") is BulkAction.REPLAY
    with pytest.raises(InvalidArgument) as raised:
        parse_action("nuke")
    assert raised.value.allowed == "one of cancel, requeue, replay, delete"


@pytest.mark.parametrize(
    ("matched", "affected", "refused", "skipped"),
    [
        (10, 10, 0, 0),  # all done
        (10, 7, 1, 3),  # one refused, two left the filter before the walk came
        (10, 9, 1, 1),  # one refused, none left
        (10, 12, 0, 0),  # two joined the filter below the top: never negative
        (10, 11, 2, 2),  # joiners make up for leavers, never for refusals
    ],
)
def test_skipped_counts_refusals_and_runs_that_left(
    matched: int, affected: int, refused: int, skipped: int
) -> None:
    assert skipped_count(matched, affected, refused) == skipped
