"""The library's listings filter as the API's do (issue 29): ``App.list_runs`` by owner,
labels and priority through the API's RunSearch, ``App.list_schedules`` by owner and
labels; a bad filter is refused naming the value, on both stores."""

from __future__ import annotations

import pytest

import rota
from rota.errors import InvalidArgument


@pytest.fixture
def app(make_app):
    app = make_app()

    @app.handler("h")
    async def h(ctx: rota.RunContext, payload: object) -> None:
        return None

    return app


def test_runs_are_listed_by_owner_labels_and_priority(app):
    both = app.enqueue("h", owner="billing", labels={"env": "prod", "customer": "acme"})
    prod = app.enqueue("h", owner="data", labels={"env": "prod"}, priority=2)
    bare = app.enqueue("h", priority=2)

    def ids(**filters):
        return [run.id for run in app.list_runs(**filters)]

    assert ids(owner="billing") == [both]
    assert ids(labels={"env": "prod"}) == [prod, both]
    assert ids(labels={"env": "prod", "customer": "acme"}) == [both]
    assert ids(priority=2) == [bare, prod]
    assert ids(priority=2, labels={"env": "prod"}, state="pending") == [prod]
    assert ids(owner="nobody") == []
    assert ids(state="succeeded") == []
    assert ids(limit=1000) == [bare, prod, both]
    assert ids(limit=1, before_id=prod) == [both]


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"owner": "has space"}, "owner"),
        ({"labels": {"Env": "x"}}, "label key"),
        ({"priority": 11}, "priority"),
        ({"state": "sleepy"}, "state"),
        ({"limit": 1001}, "limit"),
    ],
)
def test_a_bad_run_filter_is_refused_naming_it(app, filters, named):
    with pytest.raises(InvalidArgument, match=named):
        app.list_runs(**filters)


def test_schedules_are_listed_by_owner_and_labels(app):
    app.schedule("a", handler="h", owner="ops", labels={"env": "prod", "tier": "1"})
    app.schedule("b", handler="h", owner="ops", labels={"env": "dev"})
    app.schedule("c", handler="h", labels={"env": "prod"})

    def names(**filters):
        return [job.spec.name for job in app.list_schedules(**filters)]

    assert names(owner="ops") == ["a", "b"]
    assert names(labels={"env": "prod"}) == ["a", "c"]
    assert names(owner="ops", labels={"env": "prod", "tier": "1"}) == ["a"]
    assert names() == ["a", "b", "c"]
    with pytest.raises(InvalidArgument, match="owner"):
        app.list_schedules(owner="has space")
