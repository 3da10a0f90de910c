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
from rota.services.bulk import new_runs, run_batch
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


def test_a_run_batch_makes_the_runs_new_runs_makes_as_they_are_read():
    registry = _registry()
    requests = _mixed_requests()
    batch = run_batch(registry, requests, NOW)
    made = new_runs(registry, requests, NOW)
    assert len(batch) == len(made)
    assert batch[3] == made[3]
    assert batch[2:9] == made[2:9]
    assert batch[-1] == made[-1]
    assert list(batch) == made
    backwards = run_batch(registry, requests, NOW)  # nothing made yet
    assert backwards[12:3:-2] == made[12:3:-2]


def test_a_run_batch_is_the_requests_as_they_were_given():
    """A copy: a caller's list that changes while the batch is read changes nothing."""
    registry = _registry()
    requests: list[Any] = [{"handler": "ok", "payload": i} for i in range(3)]
    batch = run_batch(registry, requests, NOW)
    requests.append({"handler": "ok", "payload": 3})
    requests[0] = {"handler": "nope"}
    assert [run.payload_json for run in batch] == ["0", "1", "2"]


def test_a_run_batch_raises_its_refusal_on_every_later_read():
    """A batch never looks shorter than it is: a read past the refusal raises it again."""
    registry = _registry()
    good = [{"handler": "ok", "payload": {"i": i}} for i in range(3)]
    batch = run_batch(registry, [*good, {"handler": "ok", "priority": 99}, *good], NOW)
    assert batch[0].payload_json == '{"i":0}'
    for read in (list, lambda b: b[6], lambda b: b[1:]):
        with pytest.raises(InvalidArgument, match="priority"):
            read(batch)


@pytest.mark.parametrize(
    ("requests", "unkeyed"),
    [
        ([{"handler": "ok"}, RunRequest("ok")], True),
        ([{"handler": "ok"}, {"handler": "ok", "idempotency_key": "k"}], False),
        ([RunRequest("ok", idempotency_key="k")], False),
        ([{"handler": "ok"}, "not a request"], False),  # the enqueue then raises for it
    ],
)
def test_a_run_batch_says_whether_any_request_has_a_key_without_making_a_run(requests, unkeyed):
    batch = run_batch(_registry(), requests, NOW)
    assert batch.unkeyed() is unkeyed


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


@pytest.mark.parametrize("late", [700, 2_500])
async def test_a_bad_run_read_during_the_copy_aborts_it_and_writes_nothing(app, late):
    """On PostgreSQL a large batch's runs are made while COPY sends the ones before:
    the first chunk while the ids are drawn (700), a later one inside the COPY (2,500).
    The error is the request's own, the COPY is aborted whole, and the connection it
    used serves the next enqueue."""
    requests: list[dict[str, Any]] = [{"handler": "ok", "payload": {"i": i}} for i in range(3_000)]
    requests[late] = {"handler": "ok", "payload": {"x": float("nan"), "secret": SECRET}}
    with pytest.raises(InvalidArgument, match=r"payload\.x") as caught:
        await app.enqueue_many_async(requests)
    assert SECRET not in str(caught.value)
    store = await app.store()
    assert await store.list_runs(RunFilter()) == []
    ids = await app.enqueue_many_async(_store_requests(300))
    assert len(set(ids)) == 300
    assert len(await store.list_runs(RunFilter(limit=500))) == 300
