"""The leader's cluster gauges: computed on its timer from one read, exported only while
fresh, cleared when leadership ends or the read fails, and filtered by namespace for a
caller who reaches only some. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import rota
from rota.domain.runs import NewRun
from rota.domain.states import RunState
from rota.domain.stats import QueueCount
from rota.errors import StoreUnavailable
from rota.observe import exposition, hooks
from rota.observe.cluster import STALE_AFTER, ClusterGauges
from tests.engine.conftest import working
from tests.helpers import eventually

from .metrics_support import Delta, sample


async def _seed(store: rota.Store) -> None:
    runs = [
        NewRun(handler="h", payload_json="1", queue="alpha-q", namespace="team-a"),
        NewRun(handler="h", payload_json="1", queue="alpha-q", namespace="team-a"),
        NewRun(handler="h", payload_json="1", queue="beta-secret-q", namespace="team-b"),
    ]
    await store.enqueue(runs, None)


async def test_published_gauges_are_filtered_by_namespace(make_app) -> None:
    app = make_app()
    store = await app.store()
    await _seed(store)
    await hooks.publish_cluster_gauges(store, app.clock)
    pending = {"namespace": "team-a", "queue": "alpha-q", "state": "pending"}
    assert sample("rota_queue_runs", pending) == 2
    age = sample("rota_queue_oldest_due_age_seconds", {"namespace": "team-a", "queue": "alpha-q"})
    assert age >= 0

    full = exposition.render(None).decode()
    assert "beta-secret-q" in full
    assert "rota_runs_enqueued_total" in full

    limited = exposition.render(frozenset({"team-a"})).decode()
    assert "alpha-q" in limited
    assert "beta-secret-q" not in limited
    assert "team-b" not in limited
    assert "rota_workers" not in limited  # names no namespace: full reach only
    assert "rota_runs_enqueued_total" not in limited  # process series: full reach only
    hooks.OBSERVER.cluster.clear()


async def test_a_failed_read_clears_the_gauges_and_is_counted(make_app) -> None:
    app = make_app()
    store = await app.store()
    await _seed(store)
    await hooks.publish_cluster_gauges(store, app.clock)
    assert "alpha-q" in exposition.render(None).decode()

    class Unreachable:
        async def now(self, now: datetime | None) -> datetime:
            raise StoreUnavailable("down for the test")

    delta = Delta()
    await hooks.publish_cluster_gauges(Unreachable(), app.clock)  # type: ignore[arg-type]
    assert "alpha-q" not in exposition.render(None).decode()
    assert delta("rota_metrics_errors_total", {"part": "cluster_gauges"}) == 1


def test_a_stale_snapshot_is_not_exported() -> None:
    now = [100.0]
    gauges = ClusterGauges(lambda: now[0])
    count = QueueCount("default", "q", RunState.PENDING, 1, None)
    gauges.publish([count], [], datetime(2030, 1, 1, tzinfo=UTC))
    assert [f.name for f in gauges.collect()] == [
        "rota_queue_runs",
        "rota_queue_oldest_due_age_seconds",
        "rota_dead_letter_runs",
        "rota_workers",
    ]
    now[0] += STALE_AFTER + 1
    assert list(gauges.collect()) == []


def test_losing_leadership_clears_the_gauges() -> None:
    hooks.OBSERVER.cluster.publish([], [], datetime(2030, 1, 1, tzinfo=UTC))
    assert hooks.OBSERVER.cluster.current() is not None
    hooks.leadership("om-node", None, changed=True)
    assert hooks.OBSERVER.cluster.current() is None
    assert sample("rota_leader", {"node": "om-node"}) == 0


async def test_the_leader_publishes_on_its_timer(make_app) -> None:
    hooks.OBSERVER.cluster.clear()
    app = make_app()
    async with working(app, node_id="om-leader"):
        await eventually(_leading_and_published, what="the leader to publish the cluster gauges")
    assert sample("rota_leader_term") >= 0


async def _leading_and_published() -> bool:
    return (
        sample("rota_leader", {"node": "om-leader"}) == 1
        and sample("rota_workers", {"state": "active"}) >= 1
    )


async def test_open_breakers_are_a_gauge_per_handler(make_app) -> None:
    from rota.domain.breakers import Breaker
    from rota.domain.runs import Outcome
    from rota.domain.states import AttemptOutcome
    from rota.store.port import ClaimRequest

    app = make_app()
    store = await app.store()
    await store.set_breaker_rule("h", Breaker(failures=1, cool_down=3600))
    await store.enqueue([NewRun(handler="h", payload_json="1")], None)
    [run] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0, ()), None)
    failed = Outcome(run.run_id, run.fence, RunState.FAILED, AttemptOutcome.FAILED)
    await store.complete([failed], None)
    await hooks.publish_cluster_gauges(store, app.clock)
    assert sample("rota_breakers_open", {"handler": "h"}) == 1
    await store.reset_breaker("h", "", None)
    await hooks.publish_cluster_gauges(store, app.clock)
    assert sample("rota_breakers_open", {"handler": "h"}) == 0
    hooks.OBSERVER.cluster.clear()


async def test_a_paused_queue_is_a_gauge_until_resumed(make_app) -> None:
    app = make_app()
    store = await app.store()
    await store.set_queue_paused("mail", True, "ana", None)
    await hooks.publish_cluster_gauges(store, app.clock)
    assert sample("rota_queue_paused", {"queue": "mail"}) == 1
    await store.set_queue_paused("mail", False, None, None)
    await hooks.publish_cluster_gauges(store, app.clock)
    assert sample("rota_queue_paused", {"queue": "mail"}) == 0
    assert "rota_queue_paused" not in exposition.render(frozenset({"default"})).decode()
    hooks.OBSERVER.cluster.clear()
