"""Retry policies are pure: attempt number in, delay out."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.domain.retry import Exponential, ExponentialJitter, Fixed, GiveUp, RetryIn, decide
from rota.errors import InvalidArgument


def test_fixed():
    assert [Fixed(7).delay(n) for n in (1, 2, 9)] == [7, 7, 7]


def test_exponential_grows_then_caps():
    policy = Exponential(base=1, factor=2, cap=10)
    assert [policy.delay(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert policy.delay(10_000) == 10  # no overflow


@given(st.integers(min_value=1, max_value=5000), st.integers(min_value=0, max_value=2**32))
def test_jitter_stays_within_zero_and_the_exponential_delay(attempt, seed):
    jitter = ExponentialJitter(base=0.5, cap=60, rng=random.Random(seed))
    delay = jitter.delay(attempt)
    assert 0 <= delay <= Exponential(base=0.5, cap=60).delay(attempt)


def test_decide_retries_until_the_budget_is_spent():
    assert decide(Fixed(3), attempt=1, max_attempts=3) == RetryIn(3)
    assert decide(Fixed(3), attempt=2, max_attempts=3) == RetryIn(3)
    assert isinstance(decide(Fixed(3), attempt=3, max_attempts=3), GiveUp)


@pytest.mark.parametrize(
    "make",
    [lambda: Fixed(-1), lambda: Exponential(base=-1), lambda: Exponential(factor=0.5)],
)
def test_bad_policies_are_refused(make):
    with pytest.raises(InvalidArgument):
        make()


@pytest.mark.parametrize("attempt", [1024, 1025, 10**6])
def test_huge_attempt_numbers_do_not_overflow(attempt):
    assert Exponential(base=0.5, factor=2, cap=60).delay(attempt) == 60
    assert ExponentialJitter(base=0.5, cap=60, rng=random.Random(1)).delay(attempt) <= 60
