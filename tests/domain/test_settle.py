"""The settle rules as pure functions (the contract suite holds both stores to them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.domain.settle import (
    Reaped,
    completed_state,
    deadline_error,
    reap_verdict,
    released_state,
    retry_sort_at,
)
from rota.domain.states import RunState

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def reaped(**changes: object) -> Reaped:
    fields: dict[str, object] = {
        "cancel_requested": False,
        "lost_count": 0,
        "attempt": 1,
        "max_attempts": 3,
        "poison_after": 3,
        "worker_id": "w-1",
    }
    fields.update(changes)
    return reap_verdict(**fields)  # type: ignore[arg-type]


def verdict(**changes: object) -> RunState:
    return reaped(**changes).state


def test_a_lost_run_with_budget_left_goes_back_to_pending() -> None:
    assert verdict() is RunState.PENDING
    assert (
        reap_verdict(
            cancel_requested=False,
            lost_count=0,
            attempt=1,
            max_attempts=3,
            poison_after=3,
            worker_id=None,
        ).error
        is None
    )


def test_cancel_outranks_poison_and_spent_attempts() -> None:
    assert verdict(cancel_requested=True, lost_count=9, attempt=3) is RunState.CANCELLED


def test_poison_and_spent_attempts_dead_letter() -> None:
    assert verdict(lost_count=2) is RunState.DEAD_LETTERED  # third loss in a row
    assert verdict(attempt=3) is RunState.DEAD_LETTERED


def test_error_texts_name_the_worker_and_the_losses() -> None:
    poison = reaped(lost_count=2, worker_id=None)
    assert poison.error == "poison: lost its worker 3 times in a row"
    assert poison.attempt_error == "lease expired: worker ? stopped renewing it"


@pytest.mark.parametrize("state", list(RunState))
def test_a_retry_and_a_success_give_way_to_a_cancel_request(state: RunState) -> None:
    gives_way = state in (RunState.RETRYING, RunState.SUCCEEDED)
    expected = RunState.CANCELLED if gives_way else state
    assert completed_state(state, cancel_requested=True) is expected
    assert completed_state(state, cancel_requested=False) is state


def test_release_and_retry_sort_at() -> None:
    assert released_state(True) is RunState.CANCELLED
    assert released_state(False) is RunState.PENDING
    lead, delay = timedelta(seconds=300), timedelta(seconds=30)
    assert retry_sort_at(T0, delay, T0, T0 - lead) == T0 + delay - lead


def test_a_deadline_error_names_the_instant_in_utc() -> None:
    assert deadline_error(T0) == "deadline_exceeded: not started by 2030-01-01T00:00:00Z"
