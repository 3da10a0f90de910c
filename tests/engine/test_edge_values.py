"""The library refuses, on both stores alike, every value a store cannot hold or that
would overflow rota's arithmetic later (issue 8): before, SQLite took most of them and
PostgreSQL failed with a database error, or (a NUL in a payload) took the job and then
failed every planner tick."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

import rota
from rota.domain.runs import RunFilter
from rota.errors import InvalidArgument

NESTED = [[[[[[[[[[[]]]]]]]]]]] * 1
for _ in range(15):
    NESTED = [NESTED] * 1
    NESTED = [[[[[[[[[[NESTED]]]]]]]]]]


@pytest.fixture
def app(make_app):
    app = make_app()

    @app.handler("h")
    async def h(ctx: rota.RunContext, payload: object) -> None:
        return None

    return app


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"payload": {"a": "x\x00"}}, "payload.a"),
        ({"payload": {"k\x00": 1}}, "payload.<key 0>"),
        ({"payload": ["\ud800"]}, "payload.0"),
        ({"payload": 10**5000}, "payload"),
        ({"payload": [float("inf")]}, "payload.0"),
        ({"payload": NESTED}, "payload"),
        ({"max_attempts": 2**31}, "max_attempts"),
        ({"concurrency_key": "k", "key_limit": 2**31}, "key_limit"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": 1e300}, "timeout"),
        ({"queue": "default\n"}, "queue"),
        ({"tags": ["gpu\n"]}, "tag"),
        ({"concurrency_key": "k\n"}, "concurrency_key"),
        # The planner's overlap keys are reserved: a run carrying one would make the
        # job's next slots skip (ADR 0029).
        ({"concurrency_key": "rota:overlap:skip:1"}, "concurrency_key"),
        ({"idempotency_key": "k\x00"}, "idempotency_key"),
        ({"run_at": datetime(9999, 12, 31, 23, tzinfo=UTC)}, "run_at"),
        ({"run_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))}, "run_at"),
        (
            {"deadline": datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-1)))},
            "deadline",
        ),
    ],
)
async def test_enqueue_refuses_what_a_store_cannot_hold(app, options, field):
    options = {"payload": None, **options}
    payload = options.pop("payload")
    with pytest.raises(InvalidArgument) as caught:
        await app.enqueue_async("h", payload, **options)
    assert f"invalid {field}" in str(caught.value)
    assert "x\x00" not in str(caught.value)  # a payload value is never echoed
    store = await app.store()
    assert await store.list_runs(RunFilter()) == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"interval": 1e300}, "interval"),
        ({"interval": 20 * 365 * 24 * 3600}, "interval"),
        ({"at": datetime(9999, 12, 31, 23, tzinfo=UTC)}, "at"),
        ({"cron": "0 2 * * *", "run_all_cap": 10**6}, "run_all_cap"),
        ({"cron": "0 2 * * *", "jitter": 1e9}, "jitter"),
        ({"cron": "0 2 * * *", "catch_up_window": float("inf")}, "catch_up_window"),
        ({"cron": "0 2 * * *", "timezone": "UTC\x00"}, "time zone"),
        ({"cron": "0 2 * * *", "payload": {"a": "\x00"}}, "payload.a"),
        ({"cron": "0 2 * * *", "max_attempts": 2**31}, "max_attempts"),
    ],
)
def test_schedule_refuses_what_a_store_cannot_hold(app, options, field):
    options = dict(options)  # shared by the sqlite and postgres cases
    payload = options.pop("payload", None)
    with pytest.raises(InvalidArgument) as caught:
        app.schedule("job", handler="h", payload=payload, **options)
    assert f"invalid {field}" in str(caught.value)
    assert app.list_schedules() == []


@pytest.mark.parametrize("run_id", [0, -1, 2**53, 2**63, 2**64])
def test_run_ids_out_of_range_are_refused(app, run_id):
    for call in (app.get_run, app.cancel, app.replay, app.run_detail):
        with pytest.raises(InvalidArgument, match="run_id"):
            call(run_id)
    with pytest.raises(InvalidArgument, match="before_id"):
        app.list_runs(before_id=run_id)


def test_filters_and_limits_out_of_range_are_refused(app):
    with pytest.raises(InvalidArgument, match="handler"):
        app.list_runs(handler="h\x00")
    with pytest.raises(InvalidArgument, match="max_running"):
        app.set_limit("queue", "default", 2**31)
    with pytest.raises(InvalidArgument, match="idempotency_key"):
        app.trigger("nope", idempotency_key="k\x00")


def test_the_edges_inside_the_range_are_accepted(app):
    run_id = app.enqueue(
        "h",
        {"deep": "é😀", "n": 10**300, "x": 1e308},
        max_attempts=2**31 - 1,
        run_at=datetime(8999, 12, 31, tzinfo=UTC),
        timeout=10 * 365 * 24 * 3600,
    )
    assert app.get_run(run_id).payload["n"] == 10**300
    app.schedule("late", handler="h", at=datetime(8999, 12, 31, 23, tzinfo=UTC))
    assert app.get_schedule("late").next_fire_at == datetime(8999, 12, 31, 23, tzinfo=UTC)
