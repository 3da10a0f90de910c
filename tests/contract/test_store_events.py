"""Events in the store: a publish stores the event and makes one run per matching
subscription in one transaction; the same event again makes nothing (ADR 0023)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rota.domain.events import NewEvent, event_key
from rota.domain.jobs import Job, JobSpec
from rota.domain.runs import Run, RunFilter
from rota.store.event_port import EventStore
from rota.store.port import Store

from .support import DEADLINE_SECONDS, T0, at


async def all_runs(store: Store) -> list[Run]:
    """Every run, oldest first."""
    return sorted(await store.list_runs(RunFilter(limit=100)), key=lambda run: run.id)


def events(store: Store) -> EventStore:
    return store.events


def order(event_id: str, payload: Any, name: str = "order.created") -> NewEvent:
    return NewEvent(name=name, event_id=event_id, payload_json=json.dumps(payload))


async def job(store: Store, name: str, handler: str = "receipt", namespace: str = "default") -> Job:
    spec = JobSpec(name=name, handler=handler, namespace=namespace)
    return await store.save_job(spec, T0, None, T0)


async def test_the_same_event_five_times_makes_one_run(store: Store) -> None:
    receipts = await job(store, "receipts")
    subscription = await events(store).subscribe_job(receipts, "order.created", {}, T0)
    results = [await events(store).publish(order("o-1", {"total": 5}), at(i)) for i in range(5)]
    assert [r.created for r in results] == [True, False, False, False, False]
    assert len(results[0].run_ids) == 1
    assert all(r.run_ids == () for r in results[1:])
    runs = await all_runs(store)
    assert [run.id for run in runs] == list(results[0].run_ids)
    [run] = runs
    assert run.job_id == receipts.id
    assert run.idempotency_key == event_key(subscription.id, "o-1")
    assert (run.payload, run.correlation_id) == ({"total": 5}, "o-1")
    assert results[4].event.runs_created == 1
    assert results[4].event.published_at == T0  # the first publish is the event


async def test_concurrent_publishes_of_one_event_make_one_run(store: Store) -> None:
    await events(store).subscribe_job(await job(store, "receipts"), "order.created", {}, T0)
    publishes = [events(store).publish(order("o-2", {}), T0) for _ in range(5)]
    results = await asyncio.wait_for(asyncio.gather(*publishes), DEADLINE_SECONDS)
    assert sorted(r.created for r in results) == [False, False, False, False, True]
    assert len(await all_runs(store)) == 1


async def test_filters_choose_the_subscriptions_that_run(store: Store) -> None:
    eu = await job(store, "eu-orders", handler="eu")
    gold = await job(store, "gold-orders", handler="gold")
    every = await job(store, "all-orders", handler="all")
    await events(store).subscribe_job(eu, "order.created", {"region": "eu"}, T0)
    await events(store).subscribe_job(gold, "order.created", {"customer.tier": "gold"}, T0)
    await events(store).subscribe_job(every, "order.created", {}, T0)
    payload = {"region": "us", "customer": {"tier": "gold"}}
    published = await events(store).publish(order("o-3", payload), T0)
    handlers = sorted(run.handler for run in await all_runs(store))
    assert handlers == ["all", "gold"]
    assert published.event.runs_created == 2
    other = await events(store).publish(order("o-4", {"region": "eu"}, name="order.paid"), T0)
    assert other.run_ids == ()  # no subscription to that name


async def test_an_event_reaches_only_its_own_namespace(store: Store) -> None:
    await events(store).subscribe_job(
        await job(store, "receipts", namespace="shop"), "order.created", {}, T0
    )
    assert (await events(store).publish(order("o-5", {}), T0)).run_ids == ()
    shop = NewEvent(name="order.created", event_id="o-5", payload_json="{}", namespace="shop")
    published = await events(store).publish(shop, T0)
    assert published.created
    assert len(published.run_ids) == 1


async def test_paused_or_deleted_or_unsubscribed_jobs_make_no_runs(store: Store) -> None:
    paused = await job(store, "paused", handler="p")
    gone = await job(store, "gone", handler="g")
    left = await job(store, "left", handler="l")
    for subscribed in (paused, gone, left):
        await events(store).subscribe_job(subscribed, "order.created", {}, T0)
    await store.set_job_paused("default", "paused", True, T0, None, T0)
    await store.delete_job("default", "gone")
    assert await events(store).unsubscribe_job(left, "order.created")
    assert not await events(store).unsubscribe_job(left, "order.created")
    assert (await events(store).publish(order("o-6", {}), T0)).run_ids == ()
    remaining = await events(store).list_subscriptions_to_events(None)
    assert [s.job_name for s in remaining] == ["paused"]  # deletion cascades


async def test_subscribing_again_replaces_the_filter(store: Store) -> None:
    receipts = await job(store, "receipts")
    first = await events(store).subscribe_job(receipts, "order.created", {"region": "eu"}, T0)
    second = await events(store).subscribe_job(receipts, "order.created", {"region": "us"}, at(1))
    assert second.id == first.id
    assert second.filter == {"region": "us"}
    [listed] = await events(store).list_subscriptions_to_events(["default"])
    assert (listed.job_name, listed.event_name, listed.filter) == (
        "receipts",
        "order.created",
        {"region": "us"},
    )
    assert await events(store).list_subscriptions_to_events(["other"]) == []


async def test_events_are_listed_newest_first_in_keyset_pages(store: Store) -> None:
    for i in range(5):
        await events(store).publish(order(f"o-{i}", {"i": i}), at(i))
    await events(store).publish(order("p-1", {}, name="order.paid"), at(9))
    first = await events(store).list_events(None, None, "order.created", None, 3)
    assert [e.event_id for e in first] == ["o-4", "o-3", "o-2"]
    rest = await events(store).list_events(None, None, "order.created", first[-1].id, 3)
    assert [e.event_id for e in rest] == ["o-1", "o-0"]
    assert rest[0].payload == {"i": 1}
    assert await events(store).list_events(["elsewhere"], None, None, None, 10) == []
    assert len(await events(store).list_events(["default"], "default", None, None, 10)) == 6


async def test_retention_prunes_old_events_and_lets_their_id_publish_again(store: Store) -> None:
    await events(store).subscribe_job(await job(store, "receipts"), "order.created", {}, T0)
    await events(store).publish(order("old", {}), T0)
    await events(store).publish(order("new", {}), at(100))
    assert await events(store).prune_events(at(50), 100) == 1
    remaining = await events(store).list_events(None, None, None, None, 10)
    assert [e.event_id for e in remaining] == ["new"]
    # Pruned, the event is forgotten; while its run is kept, the run's key still holds.
    first_run = (await all_runs(store))[0]
    again = await events(store).publish(order("old", {}), at(200))
    assert again.created
    assert again.run_ids == (first_run.id,)
    assert again.event.runs_created == 0
    assert len(await all_runs(store)) == 2


async def test_a_stale_leader_prunes_nothing(store: Store) -> None:
    await events(store).publish(order("old", {}), T0)
    assert await events(store).prune_events(at(50), 100, leader_term=12345) == 0
    assert len(await events(store).list_events(None, None, None, None, 10)) == 1
