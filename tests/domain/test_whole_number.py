"""rota.domain.values.whole_number: the one reader of numbers written in paths, queries
and forms (issue 31: '²' passed str.isdigit() and then failed int() with a 500)."""

from __future__ import annotations

import pytest

from rota.domain.values import whole_number
from rota.errors import InvalidArgument


@pytest.mark.parametrize("text", ["0", "7", "0042", "9007199254740991"])
def test_ascii_digits_in_range_are_read(text: str) -> None:
    assert whole_number("n", text) == int(text)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "\u00b2",
        "\u0663",
        "+3",
        "-3",
        " 3",
        "3_000",
        "1e3",
        "9" * 5000,
        "9007199254740992",
    ],
)
def test_anything_else_is_an_invalid_argument_naming_the_field(text: str | None) -> None:
    with pytest.raises(InvalidArgument) as refused:
        whole_number("after", text)
    assert refused.value.name == "after"
    assert len(str(refused.value)) < 200  # a long value is not echoed whole


def test_the_range_is_checked() -> None:
    assert whole_number("port", "65535", 0, 65535) == 65535
    with pytest.raises(InvalidArgument, match="from 1 to 10"):
        whole_number("x", "0", 1, 10)
