"""The pure rules of the API's limits held in the database (ADR 0036)."""

from __future__ import annotations

import pytest

from rota.domain.api_limits import WindowCount, rate_window_seconds
from rota.errors import InvalidArgument


def test_a_hit_within_the_limit_waits_for_nothing() -> None:
    assert WindowCount(count=3, seconds_left=10.0).wait(3) is None


def test_a_hit_over_the_limit_waits_for_the_window_to_end() -> None:
    assert WindowCount(count=4, seconds_left=10.0).wait(3) == 10.0
    assert WindowCount(count=4, seconds_left=-0.5).wait(3) == 0.0  # never negative


def test_the_window_keeps_the_buckets_burst_and_average_rate() -> None:
    assert rate_window_seconds(20.0, 60) == 3.0  # the defaults: 60 per 3 s
    assert rate_window_seconds(0.001, 10) == 10_000.0


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 10), (-1.0, 10), (1.0, 0)])
def test_a_window_needs_a_positive_rate_and_burst(rate: float, burst: int) -> None:
    with pytest.raises(InvalidArgument):
        rate_window_seconds(rate, burst)


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        WindowCount(count=1, seconds_left=1.0).wait(0)
