"""NewRun and HandlerSpec are valid once built, whoever builds them: factories
(services.new_run, handlers.make_spec) only fill in defaults."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from rota.domain.retry import DEFAULT_POLICY
from rota.domain.runs import NewRun, encode_json
from rota.errors import InvalidArgument
from rota.handlers import HandlerSpec

BERLIN_WINTER = timezone(timedelta(hours=1))


async def _handler(ctx: Any, payload: Any) -> None:
    return None


def test_a_new_run_keeps_one_form_of_each_value():
    run = NewRun(
        "h",
        "{}",
        timeout=5,
        tags=("b", "a", "b"),
        run_at=datetime(2026, 1, 1, 13, 0, tzinfo=BERLIN_WINTER),
    )
    assert run.timeout == 5.0
    assert isinstance(run.timeout, float)
    assert run.tags == ("a", "b")
    assert run.run_at == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert run.run_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"queue": "bad queue"}, "queue"),
        ({"priority": 0}, "priority"),
        ({"timeout": -1}, "timeout"),
        ({"tags": "gpu"}, "tags"),
        ({"run_at": datetime(2026, 1, 1)}, "run_at"),  # naive: ambiguous
        ({"concurrency_limit": 0}, "key_limit"),
    ],
)
def test_a_new_run_refuses_a_bad_value_naming_it(fields, name):
    with pytest.raises(InvalidArgument, match=name):
        NewRun("h", "{}", **fields)


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"name": "bad name"}, "handler name"),
        ({"queue": ""}, "queue"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"fn": "not callable"}, "handler"),
        ({"tags": "gpu"}, "tags"),
        ({"concurrency_limit": 0}, "concurrency_limit"),
        ({"key_limit": 0}, "key_limit"),
        ({"retry": object()}, "retry"),
        ({"timeout": 0}, "timeout"),
        ({"priority": 11}, "priority"),
    ],
)
def test_a_handler_spec_refuses_a_bad_option_naming_it(fields, name):
    values: dict[str, Any] = {"name": "h", "fn": _handler, "is_async": True, **fields}
    with pytest.raises(InvalidArgument, match=name):
        HandlerSpec(**values)


def test_a_handler_spec_is_kept_in_one_form():
    spec = HandlerSpec("h", _handler, True, timeout=3, tags=("z", "a"), retry=DEFAULT_POLICY)
    assert spec.timeout == 3.0
    assert isinstance(spec.timeout, float)
    assert spec.tags == ("a", "z")


def test_a_sibling_equals_the_run_the_constructor_makes():
    shape = {"queue": "q", "priority": 2, "timeout": 3, "tags": ("b", "a"), "rate_key": "r"}
    template = NewRun("h", "null", **shape)
    own = {
        "idempotency_key": "k",
        "run_at": datetime(2026, 1, 1, 13, 0, tzinfo=BERLIN_WINTER),
        "deadline": datetime(2026, 1, 2, tzinfo=UTC),
    }
    sibling = template.sibling({"a": [1, 2.5, None, "é"]}, **own)
    assert sibling == NewRun("h", '{"a":[1,2.5,null,"\\u00e9"]}', **shape, **own)
    assert sibling.run_at is not None
    assert sibling.run_at.tzinfo is UTC
    # Its own values are its own: none is taken from the run it is a sibling of.
    assert NewRun("h", "1", **own).sibling(None) == NewRun("h", "null")


@pytest.mark.parametrize(
    ("own", "name"),
    [
        ({"payload": {"x": float("nan")}}, r"payload\.x"),
        ({"payload": {"x": ["\x00"]}}, r"payload\.x\.0"),
        ({"payload": {"x": object()}}, r"payload\.x"),
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"run_at": datetime(2026, 1, 1)}, "run_at"),
        ({"deadline": datetime(2026, 1, 1)}, "deadline"),
    ],
)
def test_a_sibling_refuses_a_bad_value_of_its_own_naming_it(own, name):
    with pytest.raises(InvalidArgument, match=name):
        NewRun("h", "{}").sibling(**{"payload": None, **own})


def test_payloads_are_encoded_as_compact_json_and_a_cycle_is_refused():
    values: list[object] = [None, "x", 1, -2.5, [], {}, {"a": [1, {"b": "é\U0001f600"}]}, {1: 2}]
    for value in values:
        assert encode_json("payload", value) == json.dumps(value, separators=(",", ":"))
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(InvalidArgument, match="payload"):
        encode_json("payload", cycle)
