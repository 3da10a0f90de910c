"""Template parameters: a workflow may declare its payload as a JSON Schema (an object
schema, with defaults), so each run's values are checked, and filled in, before
anything is written. Errors name the parameter and what it must be, never the value
given (a payload may hold a secret)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from rota.domain.linear_schema import LinearValidator, check_patterns
from rota.errors import InvalidArgument

MAX_SCHEMA_PROPERTIES = 200


class InvalidParameter(InvalidArgument):
    """A value that does not fit its template's parameters. Nothing was written."""

    def __init__(self, parameter: str | None, allowed: str) -> None:
        self.name = "parameters" if parameter is None else f"parameter {parameter!r}"
        self.value = None
        self.allowed = allowed
        # Not the value: it came from a payload.
        ValueError.__init__(self, f"invalid {self.name}: expected {allowed}")


def check_schema(schema: Any) -> dict[str, Any]:
    """``schema`` if it can declare parameters: a valid JSON Schema (2020-12) of an
    object, whose defaults fit it."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise InvalidArgument("parameters", schema, 'a JSON Schema with "type": "object"')
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidArgument("parameters", exc.message, "a valid JSON Schema") from None
    check_patterns(schema)
    properties = schema.get("properties") or {}
    if len(properties) > MAX_SCHEMA_PROPERTIES:
        raise InvalidArgument(
            "parameters", len(properties), f"at most {MAX_SCHEMA_PROPERTIES} properties"
        )
    for name, spec in properties.items():
        if isinstance(spec, Mapping) and "default" in spec:
            errors = _errors(LinearValidator(spec), spec["default"])
            if errors:
                raise InvalidArgument(
                    f"default of parameter {name!r}", spec["default"], errors[0].message
                )
    return dict(schema)


def apply(schema: Mapping[str, Any], values: Any) -> dict[str, Any]:
    """The values with the schema's defaults filled in, if they fit it; else the first
    misfit, naming its parameter."""
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise InvalidParameter(None, "an object of parameter values")
    filled = copy.deepcopy(dict(values))
    for name, spec in (schema.get("properties") or {}).items():
        if name not in filled and isinstance(spec, Mapping) and "default" in spec:
            filled[name] = copy.deepcopy(spec["default"])
    error = jsonschema.exceptions.best_match(_errors(LinearValidator(schema), filled))
    if error is None:
        return filled
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        where = ".".join(str(part) for part in [*error.absolute_path, missing[0]])
        raise InvalidParameter(where, "a value (it is required)")
    if error.validator == "additionalProperties":
        known = sorted(
            (error.schema.get("properties") or {}) if isinstance(error.schema, Mapping) else []
        )
        extra = sorted(set(error.instance or {}) - set(known))
        raise InvalidParameter(extra[0] if extra else None, f"one of: {', '.join(known)}")
    path = ".".join(str(part) for part in error.absolute_path) or None
    # The rule the value broke, in words (the value itself is not repeated).
    rule, bound = error.validator, error.validator_value
    raise InvalidParameter(path, f"type {bound}" if rule == "type" else f"{rule} {bound!r}")


def _errors(validator: Any, values: Any) -> list[jsonschema.ValidationError]:
    """Every misfit; a schema that refers to what cannot be resolved (another document,
    or itself without end) is the schema's fault, said as such rather than a 500."""
    try:
        return list(validator.iter_errors(values))
    except (Unresolvable, jsonschema.exceptions.SchemaError, RecursionError):
        raise InvalidParameter(None, "values a resolvable schema can check") from None
