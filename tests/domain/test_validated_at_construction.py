"""NewRun and HandlerSpec are valid once built, whoever builds them: factories
(services.new_run, handlers.make_spec) only fill in defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from rota.domain.retry import DEFAULT_POLICY
from rota.domain.runs import NewRun
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
