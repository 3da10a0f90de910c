"""Rate strings and the admission rule (no store)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rota.domain.rates import Rate, RateLimit, Rates, RateScope, RateUse, busiest_window, micros
from rota.errors import InvalidArgument


@pytest.mark.parametrize(
    ("text", "rate"),
    [("100/minute", Rate(100, 60)), ("20/second", Rate(20, 1)), (" 5 / hour ", Rate(5, 3600))],
)
def test_rates_parse(text: str, rate: Rate) -> None:
    assert Rate.parse(text) == rate


@pytest.mark.parametrize("text", ["10/fortnight", "0/minute", "-1/second", "ten/minute", "", 5])
def test_a_bad_rate_names_the_value(text: object) -> None:
    with pytest.raises(InvalidArgument) as caught:
        Rate.parse(text)
    assert repr(text) in str(caught.value)
    assert "rate_limit" in str(caught.value)


def test_a_bad_scope_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="rate scope"):
        RateLimit.parse("global", "*", "1/second")


def test_micros_agree_for_floats_and_datetimes() -> None:
    instant = datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert micros(instant) == micros(instant.timestamp()) or micros(instant) - 1 == micros(
        instant.timestamp()
    )
    assert micros(instant) % 1_000_000 == 123456


def test_a_full_bucket_says_when_it_frees() -> None:
    rates = Rates(handlers={"h": Rate(2, 1)})
    use = RateUse(rates, now=10_000_000)
    use.add_live(("handler", "h", ""), 2, 10_300_000)
    assert not use.admit("q", "h", None)
    assert use.next_free_in() == pytest.approx(0.3)
    assert use.admit("q", "h", "other-key")
    assert use.full(RateScope.HANDLER) == ["h"]


def test_the_busiest_window_spans_second_boundaries_and_is_half_open() -> None:
    second = 1_000_000
    # 4 starts late in one second and 4 early in the next: 8 within one period,
    # although no calendar second holds more than 4.
    late_and_early = [second - 10 + i for i in range(4)] + [second + i for i in range(4)]
    assert busiest_window(late_and_early, second) == 8
    assert busiest_window([0, second], second) == 1  # a whole period apart: no window shared
    assert busiest_window([0, second - 1], second) == 2
    assert busiest_window([], second) == 0
