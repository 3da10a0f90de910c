"""The event filter language (equality on top-level or dotted payload paths) and the
checks an event passes before any store sees it."""

from __future__ import annotations

from typing import Any

import pytest

from rota.domain.events import (
    MAX_EVENT_PAYLOAD_BYTES,
    NewEvent,
    check_filter,
    event_key,
    matches,
)
from rota.errors import InvalidArgument

PAYLOAD = {"region": "eu", "total": 3, "paid": True, "customer": {"tier": "gold", "id": 7}}


@pytest.mark.parametrize(
    ("event_filter", "expected"),
    [
        ({}, True),
        ({"region": "eu"}, True),
        ({"region": "us"}, False),
        ({"customer.tier": "gold"}, True),
        ({"customer.tier": "gold", "region": "us"}, False),  # every key must match
        ({"customer": {"tier": "gold", "id": 7}}, True),
        ({"customer": {"tier": "gold"}}, False),  # objects compare whole
        ({"total": 3.0}, True),  # JSON numbers: 3 == 3.0
        ({"paid": 1}, False),  # but true is not 1
        ({"total": True}, False),
        ({"missing": None}, False),  # a missing key is not null
        ({"region.name": "eu"}, False),  # a path through a non-object
        ({"customer.id": "7"}, False),
    ],
)
def test_filters_match_by_json_equality(event_filter: dict[str, Any], expected: bool) -> None:
    assert matches(check_filter(event_filter), PAYLOAD) is expected


def test_a_non_object_payload_matches_only_the_empty_filter() -> None:
    assert matches({}, [1, 2])
    assert not matches({"a": 1}, [1, 2])
    assert not matches({"a": 1}, None)


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ([("a", 1)], "filter"),
        ({"a..b": 1}, "a..b"),
        ({"": 1}, "filter key"),
        ({f"k{i}": i for i in range(21)}, "at most 20 keys"),
    ],
)
def test_bad_filters_are_refused_naming_the_key(bad: Any, named: str) -> None:
    with pytest.raises(InvalidArgument, match=named):
        check_filter(bad)


def test_events_are_checked_on_construction() -> None:
    with pytest.raises(InvalidArgument, match="event name"):
        NewEvent(name="", event_id="1")
    with pytest.raises(InvalidArgument, match="event id"):
        NewEvent(name="order.created", event_id="x" * 201)
    with pytest.raises(InvalidArgument, match=f"at most {MAX_EVENT_PAYLOAD_BYTES} bytes"):
        NewEvent(name="a", event_id="1", payload_json='"' + "x" * MAX_EVENT_PAYLOAD_BYTES + '"')
    NewEvent(name="a", event_id="1", payload_json='"' + "x" * (MAX_EVENT_PAYLOAD_BYTES - 2) + '"')


def test_the_run_key_fits_the_idempotency_key_limit() -> None:
    assert len(event_key(10**15, "x" * 200)) <= 255
