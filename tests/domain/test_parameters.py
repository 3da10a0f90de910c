"""Template parameters (pure): schemas checked, values checked and filled with
defaults, errors that name the parameter and never repeat the value."""

from __future__ import annotations

from typing import Any

import pytest

from rota.domain.parameters import InvalidParameter, apply, check_schema
from rota.errors import InvalidArgument

SCHEMA = check_schema(
    {
        "type": "object",
        "properties": {
            "day": {"type": "string"},
            "regions": {"type": "array", "items": {"type": "string"}, "default": ["eu"]},
            "rows": {"type": "integer", "minimum": 1, "default": 100},
        },
        "required": ["day"],
        "additionalProperties": False,
    }
)


def test_defaults_fill_in_what_is_left_out():
    assert apply(SCHEMA, {"day": "2026-11-30"}) == {
        "day": "2026-11-30",
        "regions": ["eu"],
        "rows": 100,
    }
    given = {"day": "d", "regions": ["us"], "rows": 5}
    assert apply(SCHEMA, given) == given


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "invalid parameter 'day': expected a value (it is required)"),
        (None, "invalid parameter 'day': expected a value (it is required)"),
        ({"day": 7}, "invalid parameter 'day': expected type string"),
        ({"day": "d", "rows": 0}, "invalid parameter 'rows': expected minimum 1"),
        ({"day": "d", "regions": [3]}, "invalid parameter 'regions.0': expected type string"),
        ({"day": "d", "colour": "s3cret"}, "invalid parameter 'colour': expected one of: day"),
        ([1, 2], "invalid parameters: expected an object of parameter values"),
    ],
)
def test_a_misfit_names_its_parameter_and_not_the_value(values: Any, message: str):
    with pytest.raises(InvalidParameter) as refused:
        apply(SCHEMA, values)
    assert str(refused.value).startswith(message)
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"type": "string"}, '"type": "object"'),
        ([], '"type": "object"'),
        ({"type": "object", "properties": {"a": {"type": "nope"}}}, "a valid JSON Schema"),
        ({"type": "object", "properties": {"a": {"type": "string", "default": 3}}}, "'a'"),
    ],
)
def test_a_schema_that_cannot_declare_parameters_is_refused(schema: Any, named: str):
    with pytest.raises(InvalidArgument, match=named):
        check_schema(schema)
