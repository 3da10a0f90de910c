"""The JSON Schema validator rota checks template parameters with: Draft 2020-12, with
every keyword that could take more than linear time on a caller's values replaced.

- ``pattern`` and ``patternProperties`` are matched with RE2 (google-re2), whose time
  is linear in the text: Python's backtracking ``re`` takes seconds on ``^(a+)+$`` and
  a 27-character value, doubling with each character (issue 31). A pattern RE2 cannot
  compile (a backreference, a lookaround) is refused when the schema is saved.
- ``uniqueItems`` compares canonical JSON keys in a set, where jsonschema's own
  comparison falls back to comparing every pair for objects (quadratic).

What is left is linear in the schema's size times the values' size; the caller still
runs it off the event loop with a time budget (rota.services.parameter_checks), see ADR 0028.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import jsonschema
import re2
from jsonschema.exceptions import ValidationError

from rota.domain.values import text_problem
from rota.errors import InvalidArgument

# Where a schema holds data rather than subschemas: nothing in there is a pattern.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is our error, not a line on stderr
    return re2.compile(pattern, options)


def _search(pattern: str, text: str) -> bool:
    # A value no store holds (an unpaired surrogate) is refused later, by the payload's
    # own check; RE2 reads UTF-8, so it is not matched here.
    if text_problem(text) is not None:
        return True
    return _compiled(pattern).search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"a value does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _canonical(value: Any) -> str:
    """One text per JSON Schema value: 1 and 1.0 are equal, true and 1 are not."""

    def integral(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, list):
            return [integral(x) for x in item]
        if isinstance(item, dict):
            return {k: integral(v) for k, v in item.items()}
        return item

    return json.dumps(integral(value), sort_keys=True, separators=(",", ":"))


def _unique_items(
    validator: Any, unique: bool, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[str] = set()
    for item in instance:
        key = _canonical(item)
        if key in seen:
            yield ValidationError("the array has non-unique elements")
            return
        seen.add(key)


LinearValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "uniqueItems": _unique_items,
    },
)


def check_patterns(schema: Any, where: str = "parameters") -> None:
    """Refuse a schema with a pattern RE2 cannot compile, naming the pattern and where
    it is (RE2 has no backreferences or lookarounds: their matching is what can take
    exponential time)."""
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            check_patterns(item, f"{where}.{index}")
        return
    if not isinstance(schema, Mapping):
        return
    for key, value in schema.items():
        if key in _DATA_KEYWORDS:
            continue
        if key == "pattern" and isinstance(value, str):
            _compile_or_refuse(f"{where}.pattern", value)
        elif key == "patternProperties" and isinstance(value, Mapping):
            for pattern in value:
                _compile_or_refuse(f"{where}.patternProperties", pattern)
        check_patterns(value, f"{where}.{key}")


def _compile_or_refuse(where: str, pattern: str) -> None:
    try:
        _compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "not a pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidArgument(
            where,
            pattern,
            f"a pattern RE2 can match in linear time ({reason}); backreferences and "
            "lookarounds are not supported",
        ) from None
