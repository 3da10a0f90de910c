"""What every store can hold: the checks made at the edge, before anything is written.

PostgreSQL cannot hold a NUL character in text or jsonb, nor an unpaired UTF-16
surrogate (jsonb and UTF-8 both refuse it); JSON has no NaN or Infinity; its integer
columns are 32 or 64 bits; its instants, and the arithmetic rota does on them (a lease,
a horizon, a catch-up window), must stay inside what Python, SQLite's epoch seconds and
timestamptz all represent. SQLite would take most of these, so without these checks the
two stores would differ, and on PostgreSQL one bad value, accepted once, could fail every
later statement that touches it (the planner's tick, for every namespace).

Errors name the field (a dotted path into a payload) and what is allowed, never the
value itself: it may be a secret or a payload.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from rota.errors import InvalidArgument, UnstorableValue

TEXT_RULE = "text without NUL (U+0000) or unpaired surrogates (U+D800-U+DFFF)"
# Integers a caller picks (attempts, limits, caps) go into 32-bit columns on PostgreSQL.
MAX_INT32 = 2**31 - 1
# Ids (runs, audit entries) are int64 in the stores; the API promises JSON numbers that
# every client reads exactly, so ids a caller may name stay within 2**53 - 1.
MAX_ID = 2**53 - 1
# Instants a caller may give (a job's `at`, a run's `run_at` or deadline, a search
# filter). Not before the epoch (SQLite keeps epoch seconds), and far enough below
# Python's year 9999 that rota's own arithmetic on them (+ horizon, lease, retry delay,
# catch-up window, jitter: all bounded to years) cannot overflow.
MIN_INSTANT = datetime(1970, 1, 1, tzinfo=UTC)
MAX_INSTANT = datetime(9000, 1, 1, tzinfo=UTC)  # exclusive
INSTANT_RULE = (
    "an aware instant (with a UTC offset) from 1970-01-01T00:00:00Z up to, not including, "
    "9000-01-01T00:00:00Z"
)
# Nesting of a payload or result: jsonb and the JSON codecs recurse per level.
MAX_JSON_DEPTH = 100
# In JSON text made with ensure_ascii, NUL and every surrogate appear as \u escapes;
# a surrogate *pair* (an emoji) does too, so a hit only means "look closer".
_SUSPECT_ESCAPE = re.compile(r"\\u(0000|d[89a-f][0-9a-f]{2})", re.IGNORECASE)


E = TypeVar("E", bound=StrEnum)


def one_of(name: str, enum: type[E], value: object) -> E:
    """``value`` as a member of ``enum``, or an error naming it and every allowed value."""
    try:
        return enum(str(value))
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise InvalidArgument(name, value, f"one of {allowed}") from None


def text_problem(value: str) -> str | None:
    """Why no store can hold ``value``, or None if every store can."""
    if "\x00" in value:
        return "contains a NUL character (U+0000)"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an unpaired surrogate (U+D800-U+DFFF)"
    return None


def storable_text(value: str) -> str:
    """``value`` with what no store can hold replaced (for text rota writes itself from
    errors it did not choose: U+FFFD for NUL, escapes for unpaired surrogates)."""
    if text_problem(value) is None:
        return value
    cleaned = value.replace("\x00", "\ufffd")
    return cleaned.encode("utf-8", "backslashreplace").decode("utf-8")


def storable_json_text(text: str) -> str:
    """JSON text rota writes on a handler's behalf (the fields of a log line), made
    storable: NUL and unpaired surrogates replaced, NaN and Infinity written as
    strings, nesting cut at MAX_JSON_DEPTH. A handler cannot refuse, so nothing it
    logs may fail the write that carries every other line and outcome of its worker."""
    if not (_suspect(text) or "NaN" in text or "Infinity" in text or text_problem(text)):
        return text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return json.dumps({"unreadable": storable_text(text[:1000])})
    return json.dumps(_storable(value, 0), separators=(",", ":"))


def _storable(value: Any, depth: int) -> Any:
    if depth > MAX_JSON_DEPTH:
        return "(nested too deep)"
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): _storable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v, depth + 1) for v in value]
    return value


def check_text(name: str, value: str, max_length: int | None = None) -> str:
    """``value`` if every store can hold it (and it is at most ``max_length`` long)."""
    if not isinstance(value, str):
        raise InvalidArgument(name, value, "a string")
    if text_problem(value) is not None:
        raise UnstorableValue(name, TEXT_RULE)
    if max_length is not None and len(value) > max_length:
        raise UnstorableValue(name, f"at most {max_length} characters")
    return value


def check_id(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise InvalidArgument(name, value, f"an integer 1-{MAX_ID}")
    return value


def require_aware(value: datetime, name: str) -> datetime:
    """Reject naive datetimes: rota never guesses a time zone. Returned in UTC."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument(
            name, value, "an aware datetime (with tzinfo); naive datetimes are ambiguous"
        )
    return value.astimezone(UTC)


def check_instant(name: str, value: object) -> datetime:
    """An aware instant inside [MIN_INSTANT, MAX_INSTANT), returned in UTC."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument(name, value, f"{INSTANT_RULE}; naive datetimes are ambiguous")
    if not in_instant_range(value):
        raise InvalidArgument(name, value, INSTANT_RULE)
    return value.astimezone(UTC)


def in_instant_range(value: datetime) -> bool:
    """Whether an aware instant lies in [MIN_INSTANT, MAX_INSTANT). Aware comparisons
    never overflow, unlike astimezone() at the calendar's edges."""
    return MIN_INSTANT <= value < MAX_INSTANT


# One encoder for every payload: json.dumps with options builds a new one per call,
# which a bulk enqueue of 20,000 runs pays 20,000 times. It holds no state between calls.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _one_shot_encoder() -> Callable[[Any], str]:
    """The C encoder behind _COMPACT_JSON, made once: JSONEncoder.encode makes a new
    one per call (more than half of its time on a small payload). The same text; no
    circular-reference check, so a cycle ends in RecursionError, which encode_json
    treats as too deep. CPython without its C accelerator: JSONEncoder.encode."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _COMPACT_JSON.encode
    encoder = make(
        None,  # markers: no circular-reference check
        _COMPACT_JSON.default,
        json.encoder.encode_basestring_ascii,
        None,  # indent
        ":",
        ",",
        False,  # sort_keys
        False,  # skipkeys
        False,  # allow_nan
    )
    return lambda value: "".join(encoder(value, 0))


_encode_compact = _one_shot_encoder()


def encode_json(name: str, value: Any) -> str:
    """``value`` as JSON text every store can hold; UnstorableValue (naming the path
    inside ``value``, not its content) for what JSON or a store cannot carry."""
    try:
        text = _encode_compact(value)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or _suspect(text):
        _check_json(name, value)
        if text is None:  # defensive: _check_json should have said why
            raise UnstorableValue(name, "a JSON value")
    return text


def check_json_text(name: str, text: str) -> str:
    """JSON text (already encoded) every store can hold. Cheap unless the text has an
    escape worth a closer look: then it is parsed and walked for the path at fault."""
    if not isinstance(text, str) or text_problem(text) is not None:
        raise UnstorableValue(name, f"JSON text as {TEXT_RULE}")
    if _suspect(text):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            raise UnstorableValue(name, "valid JSON text") from None
        _check_json(name, value)
    return text


def _suspect(text: str) -> bool:
    """Whether JSON text may hold what the walk refuses: an escape for NUL or a
    surrogate, or enough containers that it might nest too deep."""
    if _SUSPECT_ESCAPE.search(text) is not None:
        return True
    # A text this short cannot hold that many containers (most payloads): not counted.
    return len(text) > MAX_JSON_DEPTH and text.count("[") + text.count("{") > MAX_JSON_DEPTH


def _check_json(path: str, value: Any) -> None:
    """Walk ``value`` and raise for the first part JSON or a store cannot hold."""
    stack: list[tuple[str, Any, int]] = [(path, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise UnstorableValue(
                where[:80] + "...", f"JSON nested at most {MAX_JSON_DEPTH} levels deep"
            )
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            if text_problem(item) is not None:
                raise UnstorableValue(where, TEXT_RULE)
        elif isinstance(item, int):
            _check_int(where, item)
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise UnstorableValue(where, "a finite number (JSON has no NaN or Infinity)")
        elif isinstance(item, Mapping):
            for index, (key, child) in enumerate(item.items()):
                if isinstance(key, str) and text_problem(key) is not None:
                    raise UnstorableValue(f"{where}.<key {index}>", f"object keys as {TEXT_RULE}")
                if not isinstance(key, str | int | float | bool | None):
                    raise UnstorableValue(f"{where}.<key {index}>", "object keys as strings")
                stack.append((f"{where}.{key}", child, depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}.{i}", child, depth + 1) for i, child in enumerate(item))
        else:
            raise UnstorableValue(where, f"a JSON value, not {type(item).__name__}")


def _check_int(where: str, value: int) -> None:
    try:
        str(value)
    except ValueError:  # past Python's int<->str digit limit: no JSON codec takes it
        raise UnstorableValue(where, "an integer of at most 4300 digits") from None


def whole_number(name: str, text: str | None, low: int = 0, high: int = MAX_ID) -> int:
    """``text`` as an integer from ``low`` to ``high``: ASCII digits only. Every number a
    caller writes in a path, a query or a form is read here, because ``str.isdigit()``
    admits '²' (which ``int()`` then refuses) and ``int()`` admits '٣', '+3', ' 3' and
    '3_000'. The error names the field and quotes at most the start of the value (a
    path or query value, never a payload)."""
    longest = len(str(high))
    if (
        text is None
        or not text.isascii()
        or not text.isdigit()
        or len(text.lstrip("0")) > longest
        or not low <= int(text) <= high
    ):
        shown = None if text is None else text[:24] + ("..." if len(text) > 24 else "")
        raise InvalidArgument(name, shown, f"a whole number from {low} to {high}")
    return int(text)
