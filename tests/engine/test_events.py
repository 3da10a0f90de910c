"""Events through the library: a subscribed job runs once per event with the event as
its payload; on PostgreSQL a publish can join the caller's transaction (ADR 0023)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

import rota
from rota.domain.states import RunState
from rota.domain.workflows import WorkflowState
from rota.errors import InvalidArgument, UnsupportedFeature, WorkflowNotFound
from tests.engine.conftest import working
from tests.engine.test_workflows import finished
from tests.waiting import wait_for_state


def _receipts_app(app: rota.App, seen: list[Any]) -> None:
    @app.handler("send-receipt")
    async def send_receipt(ctx: rota.RunContext, payload: dict[str, Any]) -> None:
        seen.append((ctx.idempotency_key.rsplit(":", 1)[-1], payload))

    app.schedule("receipts", handler="send-receipt")


async def test_a_subscribed_job_runs_once_with_the_event(make_app: Any) -> None:
    app = make_app()
    seen: list[Any] = []
    try:
        _receipts_app(app, seen)  # the sync doors run on the App's own loop thread
        subscription = app.subscribe("order.created", job="receipts", where={"region": "eu"})
        assert subscription.filter == {"region": "eu"}
        first = await app.publish_async("order.created", {"region": "eu"}, event_id="o-1")
        again = await app.publish_async("order.created", {"region": "eu"}, event_id="o-1")
        other = await app.publish_async("order.created", {"region": "us"}, event_id="o-2")
        assert (first.created, again.created, again.run_ids, other.run_ids) == (
            True,
            False,
            (),
            (),
        )
        async with working(app):
            [run_id] = first.run_ids
            await wait_for_state(await app.store(), run_id, RunState.SUCCEEDED)
        assert seen == [("o-1", {"region": "eu"})]
        assert app.get_run(run_id).correlation_id == "o-1"
        listed = app.list_events(name="order.created")
        assert [(e.event_id, e.runs_created) for e in listed] == [("o-2", 0), ("o-1", 1)]
    finally:
        app.close()


def test_bad_publishes_name_the_value_and_write_nothing(db_url: str) -> None:
    app = rota.App(db_url)
    try:
        with pytest.raises(InvalidArgument, match="event name"):
            app.publish("", {})
        with pytest.raises(InvalidArgument, match="payload size"):
            app.publish("big", {"blob": "x" * 70_000})
        with pytest.raises(InvalidArgument, match="filter key"):
            app.subscribe("big", job="anything", where={"": 1})
        assert app.list_events() == []
    finally:
        app.close()


def test_publish_on_a_connection_needs_postgres(sqlite_url: str) -> None:
    app = rota.App(sqlite_url)
    try:
        with pytest.raises(UnsupportedFeature, match="PostgreSQL"):
            app.publish("order.created", {}, connection=object())
    finally:
        app.close()


@pytest.mark.postgres
def test_publish_inside_the_callers_transaction(pg_clean: str) -> None:
    """The event and its runs exist only if the caller commits."""
    app = rota.App(pg_clean)
    _receipts_app(app, [])
    app.subscribe("order.created", job="receipts")
    try:
        with psycopg.connect(pg_clean) as conn:
            rolled_back = app.publish("order.created", {"n": 1}, event_id="a", connection=conn)
            conn.rollback()
            committed = app.publish("order.created", {"n": 2}, event_id="b", connection=conn)
            repeated = app.publish("order.created", {"n": 2}, event_id="b", connection=conn)
            conn.commit()
        assert rolled_back.created
        assert len(rolled_back.run_ids) == 1
        assert (repeated.created, repeated.run_ids) == (False, ())
        assert [e.event_id for e in app.list_events()] == ["b"]
        assert [run.id for run in app.list_runs(limit=10)] == list(committed.run_ids)
    finally:
        app.close()


@pytest.mark.postgres
async def test_publish_async_inside_the_callers_transaction(pg_clean: str) -> None:
    app = rota.App(pg_clean)
    _receipts_app(app, [])
    try:
        await app.store()
        async with await psycopg.AsyncConnection.connect(pg_clean) as conn:
            published = await app.publish_async(
                "order.created", {"n": 1}, event_id="c", connection=conn
            )
            await conn.rollback()
        assert published.created
        store = await app.store()
        assert await store.list_runs(rota.domain.runs.RunFilter()) == []
    finally:
        await app.aclose()
        app.close()


async def test_an_event_starts_a_subscribed_workflow_once(make_app: Any) -> None:
    app = make_app()
    seen: list[Any] = []

    @app.handler("fetch")
    def fetch(ctx: rota.RunContext, payload: dict[str, Any]) -> int:
        return int(payload["total"])

    @app.handler("book")
    def book(ctx: rota.RunContext, payload: dict[str, Any]) -> None:
        seen.append((ctx.parents["fetch"], ctx.workflow_payload))

    flow = rota.Workflow("order-flow")
    fetched = flow.step("fetch")
    flow.step("book", after=[fetched])
    app.workflow(flow)
    try:
        subscription = app.subscribe("order.created", workflow="order-flow", where={"eu": True})
        assert (subscription.workflow, subscription.job_name) == ("order-flow", None)
        order = {"total": 7, "eu": True}
        published = [
            await app.publish_async("order.created", order, event_id="o-9") for _ in range(5)
        ]
        assert [len(p.workflow_run_ids) for p in published] == [1, 0, 0, 0, 0]
        skipped = await app.publish_async("order.created", {"total": 1, "eu": False})
        assert skipped.workflow_run_ids == ()
        async with working(app):
            [workflow_run_id] = published[0].workflow_run_ids
            view = await finished(app, workflow_run_id)
        assert view.state is WorkflowState.SUCCEEDED
        assert seen == [(7, order)]
        assert len(await (await app.store()).list_workflow_runs(None, 10)) == 1
    finally:
        app.close()


def test_a_workflow_subscription_needs_a_known_workflow_and_one_target(db_url: str) -> None:
    app = rota.App(db_url)
    try:
        with pytest.raises(WorkflowNotFound, match="'nope' does not exist"):
            app.subscribe("order.created", workflow="nope")
        with pytest.raises(InvalidArgument, match="exactly one of job and workflow"):
            app.subscribe("order.created")
        assert app.unsubscribe("order.created", workflow="nope") is False
    finally:
        app.close()


def test_a_publisher_that_does_not_know_a_subscribed_workflow_writes_nothing(
    db_url: str,
) -> None:
    """The workflow is saved and subscribed by one App; another App, which does not
    know its handlers, publishes: the publish is refused whole (no event, no run),
    naming the handler, not half done."""
    owner = rota.App(db_url)
    stranger = rota.App(db_url)

    @owner.handler("fetch")
    def fetch(ctx: rota.RunContext, payload: Any) -> None:
        return None

    flow = rota.Workflow("owned")
    flow.step("fetch")
    owner.workflow(flow)
    try:
        owner.subscribe("order.created", workflow="owned")
        with pytest.raises(InvalidArgument, match="'fetch'"):
            stranger.publish("order.created", {}, event_id="x")
        assert stranger.list_events() == []
        assert owner.publish("order.created", {}, event_id="x").workflow_run_ids != ()
    finally:
        owner.close()
        stranger.close()
