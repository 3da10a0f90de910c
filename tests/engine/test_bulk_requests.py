"""enqueue_many checks each distinct shape once (rota.services.bulk): the runs it makes, and the
errors it raises, are what new_run makes of each request alone; on both stores the
runs read back as if each had been enqueued alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import rota
from rota.domain.runs import RunFilter
from rota.errors import InvalidArgument, RotaError
from rota.services.bulk import new_runs
from rota.services.runs import RunRequest, new_run

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SECRET = "s3cret-value"


def _registry() -> rota.handlers.Registry:
    app = rota.App("sqlite:///unused.db")

    @app.handler("ok", queue="q1", priority=3, tags=["gpu"], key_limit=2)
    async def ok(ctx: rota.RunContext, payload: Any) -> None:
        return None

    @app.handler("other")
    async def other(ctx: rota.RunContext, payload: Any) -> None:
        return None

    return app.registry


def _mixed_requests() -> list[Any]:
    """Shapes interleaved, each form a caller may pass, and every own value."""
    requests: list[Any] = []
    for i in range(30):
        requests.append({"handler": "ok", "payload": {"i": i, "text": "é\t\U0001f600"}})
        requests.append({"payload": [i, None], "handler": "other", "priority": 1 + i % 3})
        requests.append(RunRequest("ok", i, queue="q2", timeout=2, tags=("b", "a")))
        requests.append(
            {
                "handler": "other",
                "payload": None,
                "idempotency_key": f"k{i}",
                "run_at": NOW + timedelta(seconds=i),
                "deadline": NOW + timedelta(hours=1, seconds=i),
                "concurrency_key": f"c{i % 2}",
                "key_limit": 4,
                "rate_key": "r",
                "breaker_key": "b",
            }
        )
        requests.append({"handler": "ok", "payload": i, "tags": ["x", "y"]})  # a list: alone
        requests.append({"handler": "ok", "payload": i, "priority": None, "queue": None})
    return requests


def test_runs_equal_what_new_run_makes_of_each_request_alone():
    registry = _registry()
    requests = _mixed_requests()
    alone = [new_run(registry, RunRequest.coerce(request), NOW) for request in requests]
    assert new_runs(registry, requests, NOW) == alone


def test_equal_options_of_another_type_are_not_taken_for_each_other():
    """1, 1.0 and True are equal dict keys; only 1 is a priority."""
    registry = _registry()
    [good] = new_runs(registry, [{"handler": "ok", "priority": 1}], NOW)
    assert good.priority == 1
    for wrong in (True, 1.0):
        with pytest.raises(InvalidArgument, match="priority"):
            new_runs(
                registry,
                [{"handler": "ok", "priority": 1}, {"handler": "ok", "priority": wrong}],
                NOW,
            )


def _naive() -> datetime:
    return datetime(2026, 3, 1, 12, 0)


@pytest.mark.parametrize(
    "bad",
    [
        {"handler": "ok", "payload": {"x": float("nan"), "secret": SECRET}},
        {"handler": "ok", "payload": {"deep": [{"k": object()}], "secret": SECRET}},
        {"handler": "ok", "payload": {"x": SECRET + "\x00"}},
        {"handler": "ok", "payload": {}, "idempotency_key": ""},
        {"handler": "ok", "payload": {}, "idempotency_key": "x" * 256},
        {"handler": "ok", "payload": {}, "run_at": _naive()},
        {"handler": "ok", "payload": {}, "deadline": NOW - timedelta(seconds=1)},
        {"handler": "ok", "payload": {}, "deadline": _naive()},
        {"handler": "ok", "payload": {}, "priority": 11},
        {"handler": "ok", "payload": {}, "tags": "gpu"},
        {"handler": "ok", "payload": {}, "key_limit": 3},
        {"handler": "nope", "payload": {}},
        {"handler": "ok", "payload": {}, "colour": "red"},
        {"payload": {}},
        "ok",
    ],
)
def test_a_bad_request_among_good_ones_raises_what_new_run_raises(bad):
    """The good requests before it made the template its shape shares, where it has
    one: the error is still the one of the request alone, naming the field and never a
    payload's content."""
    registry = _registry()
    with pytest.raises(RotaError) as alone:
        new_run(registry, RunRequest.coerce(bad), NOW)
    good = [{"handler": "ok", "payload": {"i": i}} for i in range(3)]
    with pytest.raises(type(alone.value)) as batch:
        new_runs(registry, [*good, bad, *good], NOW)
    assert str(batch.value) == str(alone.value)
    assert SECRET not in str(batch.value)


@pytest.fixture
def app(make_app, clock):
    app = make_app(clock)  # one instant for both enqueues: run_at defaults to it

    @app.handler("ok")
    async def ok(ctx: rota.RunContext, payload: Any) -> None:
        return None

    return app


def _store_requests(count: int) -> list[dict[str, Any]]:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    requests: list[dict[str, Any]] = []
    for i in range(count):
        if i % 3 == 0:
            requests.append({"handler": "ok", "payload": {"i": i, "text": "tab\t \\ é"}})
        elif i % 3 == 1:
            requests.append(
                {"handler": "ok", "payload": [i], "queue": "bulk", "priority": 1 + i % 10}
            )
        else:
            requests.append(
                {
                    "handler": "ok",
                    "payload": None,
                    "run_at": at + timedelta(seconds=i),
                    "deadline": at + timedelta(hours=1),
                    "tags": ("t", f"u{i % 2}"),
                    "concurrency_key": f"c{i % 4}",
                    "key_limit": 3,
                    "timeout": 1.5,
                }
            )
    return requests


async def test_a_bulk_enqueue_stores_each_run_as_one_enqueue_does(app):
    """Above the COPY threshold on PostgreSQL (shapes interleaved): each run reads back
    equal to its twin enqueued alone, but for its id."""
    requests = _store_requests(260)
    ids = await app.enqueue_many_async(requests)
    store = await app.store()
    for i in (0, 1, 2, 3, 4, 5, 258, 259):
        twin = await app.enqueue_async(**requests[i])
        copied, alone = await store.get_run(ids[i]), await store.get_run(twin)
        assert copied is not None
        assert alone is not None
        assert replace(copied, id=0) == replace(alone, id=0), i


async def test_a_bad_payload_late_in_a_bulk_enqueue_writes_nothing(app):
    requests: list[dict[str, Any]] = _store_requests(260)
    requests.append({"handler": "ok", "payload": {"x": float("inf")}})
    with pytest.raises(InvalidArgument, match=r"payload\.x"):
        await app.enqueue_many_async(requests)
    store = await app.store()
    assert await store.list_runs(RunFilter()) == []
