"""The pure breaker rules: the failure-rate mode (property tests on instants handed in),
the consecutive-failures mode beside it, fail-fast, and bad values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rota.domain.breakers import (
    MICROS,
    Breaker,
    BreakerRow,
    BreakerState,
    BreakerView,
    WhenOpen,
    as_of,
    on_outcome,
)
from rota.errors import InvalidArgument

# (microseconds since the previous outcome, failed?)
OUTCOMES = st.lists(st.tuples(st.integers(0, 30 * MICROS), st.booleans()), min_size=1, max_size=120)
RATE_RULES = st.builds(
    Breaker,
    failures=st.none(),
    window=st.sampled_from([1.0, 10.0, 60.0]),
    failure_rate=st.sampled_from([0.1, 0.25, 0.5, 0.75, 1.0]),
    min_calls=st.integers(1, 30),
)


def _first_opening(rule: Breaker, outcomes: list[tuple[int, bool]]) -> int | None:
    """The index of the outcome that opens a closed breaker, by a plain model of the
    rule: tumbling windows of ``window`` seconds, counted from the first outcome in
    each; it opens on a failure once at least ``min_calls`` outcomes of the window are
    in and the failed share is at least ``failure_rate``."""
    assert rule.failure_rate is not None
    now, start, calls, failed_calls = 0, None, 0, 0
    for index, (gap, failed) in enumerate(outcomes):
        now += gap
        if start is None or now - start >= rule.window * MICROS:
            start, calls, failed_calls = now, 0, 0
        calls += 1
        failed_calls += failed
        if failed and calls >= rule.min_calls and failed_calls / calls >= rule.failure_rate:
            return index
    return None


def _drive(rule: Breaker, outcomes: list[tuple[int, bool]]) -> tuple[int | None, str | None]:
    row, now = BreakerRow("job", ""), 10**15
    for index, (gap, failed) in enumerate(outcomes):
        now += gap
        row, transition = on_outcome(row, rule, failed, now)
        if transition is not None:
            assert transition.to_state is BreakerState.OPEN
            assert row.state is BreakerState.OPEN
            assert row.opened_at == now
            return index, transition.cause
    assert row.state is BreakerState.CLOSED
    return None, None


@settings(max_examples=300, deadline=None)
@given(RATE_RULES, OUTCOMES)
def test_the_rate_opens_it_exactly_when_the_window_says_so(
    rule: Breaker, outcomes: list[tuple[int, bool]]
) -> None:
    opened, cause = _drive(rule, outcomes)
    assert opened == _first_opening(rule, outcomes)
    if opened is not None:
        assert outcomes[opened][1], "only a failure opens it"
        assert cause is not None
        assert "outcomes failed within" in cause


@settings(max_examples=200, deadline=None)
@given(RATE_RULES, st.integers(1, 200))
def test_fewer_outcomes_than_min_calls_never_open_it(rule: Breaker, count: int) -> None:
    outcomes = [(0, True)] * min(count, rule.min_calls - 1)
    assert _drive(rule, outcomes)[0] is None
    if rule.min_calls >= 2:
        assert _drive(rule, [(0, True)] * rule.min_calls)[0] == rule.min_calls - 1


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), OUTCOMES)
def test_either_mode_opens_it_when_both_are_set(
    failures: int, min_calls: int, outcomes: list[tuple[int, bool]]
) -> None:
    both = Breaker(failures=failures, failure_rate=0.5, min_calls=min_calls)
    streak_only = Breaker(failures=failures)
    rate_only = Breaker(failure_rate=0.5, min_calls=min_calls)
    opened = [_drive(rule, outcomes)[0] for rule in (both, streak_only, rate_only)]
    alone = [i for i in opened[1:] if i is not None]
    assert opened[0] == (min(alone) if alone else None)


def test_a_window_that_passed_starts_counting_again() -> None:
    rule = Breaker(failure_rate=0.5, window=10, min_calls=4)
    row = BreakerRow("job", "")
    for second, failed in ((0, True), (1, True), (2, True)):
        row, _ = on_outcome(row, rule, failed, second * MICROS)
    row, moved = on_outcome(row, rule, True, 11 * MICROS)  # a new window: 1 of 1
    assert moved is None
    assert (row.window_calls, row.window_failures) == (1, 1)
    for second in (12, 13):
        row, moved = on_outcome(row, rule, False, second * MICROS)
    row, moved = on_outcome(row, rule, True, 14 * MICROS)  # 2 of 4 failed: 0.5
    assert moved is not None
    assert moved.cause == "2 of 4 outcomes failed within 10s (rate 0.5)"
    assert (row.window_calls, row.window_failures) == (0, 0), "a fresh window once it closes"


def test_no_failures_given_means_five_in_a_row_and_a_rate_alone_has_no_streak() -> None:
    assert Breaker().failures == 5
    assert Breaker(failure_rate=0.5).failures is None
    rule = Breaker(failure_rate=1.0, min_calls=50)
    row = BreakerRow("job", "")
    for second in range(49):
        row, moved = on_outcome(row, rule, True, second * MICROS)
        assert moved is None


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"failure_rate": 0}, "breaker failure_rate"),
        ({"failure_rate": 1.5}, "breaker failure_rate"),
        ({"failure_rate": -0.1}, "breaker failure_rate"),
        ({"failure_rate": True}, "breaker failure_rate"),
        ({"failure_rate": "0.5"}, "breaker failure_rate"),
        ({"failure_rate": 0.5, "min_calls": 0}, "breaker min_calls"),
        ({"min_calls": -3}, "breaker min_calls"),
        ({"failures": 0}, "breaker failures"),
        ({"cool_down": -1}, "breaker cool_down"),
        ({"when_open": "explode"}, "breaker when_open"),
    ],
)
def test_bad_values_name_the_value_and_what_is_allowed(
    fields: dict[str, object], named: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        Breaker(**fields)  # type: ignore[arg-type]
    value = fields[named.removeprefix("breaker ")]
    shown = repr(value) if isinstance(value, str) else str(value)
    assert f"invalid {named}: {shown}; expected " in str(caught.value)


def test_when_open_takes_the_words_and_the_view_says_why() -> None:
    rule = Breaker(failures=1, when_open="fail")
    assert rule.when_open is WhenOpen.FAIL
    row, _ = on_outcome(BreakerRow("pay", "host-a"), rule, True, 0)
    view = BreakerView({"pay": rule}, now=MICROS, rows={("pay", "host-a"): row})
    assert not view.allows("pay", "host-a")
    assert view.fails_fast("pay")
    assert view.why_closed("pay", "host-a") == (
        "circuit breaker of pay (breaker_key 'host-a') is open "
        "(1 consecutive failures within 60s): failed fast, no attempt made"
    )
    assert not BreakerView({"pay": Breaker()}, now=0).fails_fast("pay")


STREAK_RULES = st.builds(
    Breaker,
    failures=st.integers(1, 5),
    window=st.sampled_from([1.0, 10.0]),
    failure_rate=st.sampled_from([None, None, 0.5]),
    min_calls=st.integers(1, 5),
)


@settings(max_examples=300, deadline=None)
@given(STREAK_RULES, OUTCOMES, st.integers(0, 30 * MICROS))
def test_a_success_changes_nothing_exactly_when_the_complete_statement_skips_it(
    rule: Breaker, outcomes: list[tuple[int, bool]], gap: int
) -> None:
    """The complete statement (sql/*/leases.sql) writes a success of a breaker's handler
    without the breaker's transaction when no rate is counted and the breaker is closed
    with no streak. That must be exactly when the rules leave the breaker as it is."""
    row, now = BreakerRow("job", ""), 10**15
    for step_gap, failed in outcomes:
        now += step_gap
        row, _ = on_outcome(row, rule, failed, now)
        skipped = (
            rule.failure_rate is None and row.state is BreakerState.CLOSED and row.failures == 0
        )
        after, moved = on_outcome(row, rule, False, now + gap)
        assert (after == row and moved is None) == skipped


def test_a_window_that_passed_reads_as_empty() -> None:
    rule = Breaker(failure_rate=0.5, window=10, min_calls=4)
    row, _ = on_outcome(BreakerRow("job", ""), rule, True, 0)
    assert as_of(row, rule, 9 * MICROS) == row
    empty = as_of(row, rule, 10 * MICROS)
    assert (empty.window_started_at, empty.window_calls, empty.window_failures) == (None, 0, 0)
    assert as_of(row, None, 0).window_calls == 0, "without its rule there is no window"
