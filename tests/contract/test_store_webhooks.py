"""Webhooks in the store: subscriptions, the outbox written with the state change that
causes the event, and deliveries leased one at a time (ADR 0017)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest

from rota.domain.states import AttemptOutcome, RunState
from rota.domain.webhooks import (
    BROADER_EVENT,
    EVENT_OF_RUN_STATE,
    DeliveryResult,
    DeliveryState,
    EventType,
    SubscriptionNotFound,
    SubscriptionSpec,
    new_secret,
)
from rota.store.port import Store
from rota.store.queries import load_queries
from rota.store.sql_store import SqlStore
from rota.store.webhook_port import WebhookStore

from .support import T0, at, claim_one, enqueue_one, finished, retrying, succeeded

SECRET = new_secret(b"k" * 32)
ALL_RUN_EVENTS = tuple(e for e in EventType if e.value.startswith("run."))


def spec(**fields: Any) -> SubscriptionSpec:
    values: dict[str, Any] = {
        "namespace": "default",
        "url": "http://receiver.example/hook",
        "event_types": ALL_RUN_EVENTS,
    }
    return SubscriptionSpec(**{**values, **fields})


async def recorded(store: Store, result: DeliveryResult, disable_after: int, now: datetime) -> bool:
    written = await hooks(store).record_deliveries([result], disable_after, now)
    return written == {result.delivery_id}


def hooks(store: Store) -> WebhookStore:
    assert isinstance(store, SqlStore)  # the one store implements the webhook port too
    return store


async def test_subscription_round_trip(store: Store) -> None:
    made = await hooks(store).create_subscription(spec(handler="charge"), SECRET, T0)
    assert made.enabled
    assert not made.rotating
    assert made.event_types == tuple(sorted(ALL_RUN_EVENTS))
    assert made.handler == "charge"
    assert made.created_at == T0
    assert await hooks(store).list_subscriptions(["default"]) == [made]
    assert await hooks(store).list_subscriptions(["other"]) == []
    changed = await hooks(store).update_subscription(
        made.id, spec(event_types=[EventType.RUN_FAILED]), False, at(1)
    )
    assert changed.event_types == (EventType.RUN_FAILED,)
    assert not changed.enabled
    assert changed.disabled_reason == "disabled by an operator"
    fresh = new_secret(b"n" * 32)
    rotated = await hooks(store).rotate_subscription_secret(made.id, fresh, 60, at(2))
    assert rotated.rotating
    await hooks(store).delete_subscription(made.id)
    with pytest.raises(SubscriptionNotFound):
        await hooks(store).get_subscription(made.id)


@pytest.mark.parametrize(
    ("state", "outcome"),
    [
        (RunState.FAILED, AttemptOutcome.FAILED),
        (RunState.TIMED_OUT, AttemptOutcome.TIMED_OUT),
        (RunState.DEAD_LETTERED, AttemptOutcome.FAILED),
        (RunState.RETRYING, AttemptOutcome.FAILED),
        (RunState.RETRYING, AttemptOutcome.TIMED_OUT),
    ],
)
async def test_completion_writes_the_event_its_state_maps_to(
    store: Store, state: RunState, outcome: AttemptOutcome
) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    run_id = await enqueue_one(store, T0)
    await store.complete([finished(await claim_one(store, T0), state, outcome)], at(1))
    [delivery] = await hooks(store).list_deliveries(sub.id, None, 10)
    assert delivery.event_type is EVENT_OF_RUN_STATE[state.value]
    assert (delivery.run_id, delivery.run_state, delivery.state) == (
        run_id,
        state.value,
        DeliveryState.PENDING,
    )
    assert delivery.occurred_at == at(1)


async def test_only_matching_subscriptions_get_the_event(store: Store) -> None:
    wanted = await hooks(store).create_subscription(spec(handler="job"), SECRET, T0)
    other_handler = await hooks(store).create_subscription(spec(handler="mail"), SECRET, T0)
    other_ns = await hooks(store).create_subscription(spec(namespace="billing"), SECRET, T0)
    only_failed = await hooks(store).create_subscription(
        spec(event_types=[EventType.RUN_FAILED]), SECRET, T0
    )
    await enqueue_one(store, T0)
    await store.complete([succeeded(await claim_one(store, T0))], at(1))
    assert len(await hooks(store).list_deliveries(wanted.id, None, 10)) == 1
    for sub in (other_handler, other_ns, only_failed):
        assert await hooks(store).list_deliveries(sub.id, None, 10) == []


async def test_a_stale_completion_writes_no_event(store: Store) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    await enqueue_one(store, T0)
    claimed = await claim_one(store, T0)
    await store.complete([retrying(claimed)], at(1))
    [retried] = await hooks(store).list_deliveries(sub.id, None, 10)
    assert retried.event_type is EventType.RUN_RETRYING
    # The same fence again is stale: no run changes, so no event.
    await store.complete([succeeded(claimed)], at(2))
    assert await hooks(store).list_deliveries(sub.id, None, 10) == [retried]


async def test_reaper_dead_lettering_writes_the_event(store: Store) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    run_id = await enqueue_one(store, T0, max_attempts=1)
    await claim_one(store, T0, lease_seconds=10.0)
    [reaped] = await store.reap_expired(at(11), poison_after=5, limit=10)
    assert reaped.state is RunState.DEAD_LETTERED
    [delivery] = await hooks(store).list_deliveries(sub.id, None, 10)
    assert (delivery.run_id, delivery.event_type) == (run_id, EventType.RUN_DEAD_LETTERED)


async def test_deliveries_are_leased_fenced_and_retried(store: Store) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    await enqueue_one(store, T0)
    await store.complete([succeeded(await claim_one(store, T0))], at(1))
    [claimed] = await hooks(store).claim_deliveries(10, 30.0, at(1))
    assert claimed.url == sub.url
    assert claimed.keys.all() == (SECRET,)
    assert claimed.delivery.tries == 1
    # Leased: nobody else takes it until the lease ends; then it is taken over.
    assert await hooks(store).claim_deliveries(10, 30.0, at(2)) == []
    [again] = await hooks(store).claim_deliveries(10, 30.0, at(32))
    assert again.delivery.id == claimed.delivery.id
    assert again.delivery.tries == 2
    # The first deliverer's result is stale now.
    stale = DeliveryResult(claimed.delivery.id, 1, True, 200, None)
    assert not await recorded(store, stale, 5, at(33))
    failed = DeliveryResult(again.delivery.id, 2, False, 500, "HTTP 500", retry_in=10.0)
    assert await recorded(store, failed, 5, at(33))
    assert await hooks(store).claim_deliveries(10, 30.0, at(42)) == []
    [third] = await hooks(store).claim_deliveries(10, 30.0, at(43))
    done = DeliveryResult(third.delivery.id, 3, True, 204, None)
    assert await recorded(store, done, 5, at(44))
    delivered = await hooks(store).get_delivery(third.delivery.id)
    assert delivered.state is DeliveryState.DELIVERED
    assert delivered.last_status == 204
    assert (await hooks(store).get_subscription(sub.id)).consecutive_failures == 0
    # Manual redelivery: the same id (webhook-id) again, with fresh tries.
    again_pending = await hooks(store).redeliver(delivered.id, at(50))
    assert again_pending.state is DeliveryState.PENDING
    assert again_pending.tries == 0
    [redelivered] = await hooks(store).claim_deliveries(10, 30.0, at(50))
    assert redelivered.delivery.message_id == delivered.message_id


async def test_consecutive_failures_disable_the_subscription_with_the_reason(
    store: Store,
) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    for second in range(2):
        await enqueue_one(store, at(second))
        await store.complete([succeeded(await claim_one(store, at(second)))], at(second))
    claimed = await hooks(store).claim_deliveries(10, 30.0, at(5))
    for item in claimed:
        result = DeliveryResult(item.delivery.id, 1, False, None, "connection refused", None)
        assert await recorded(store, result, 2, at(6))
    disabled = await hooks(store).get_subscription(sub.id)
    assert not disabled.enabled
    assert disabled.disabled_reason == (
        "2 consecutive failed deliveries; the last: connection refused"
    )
    abandoned = await hooks(store).list_deliveries(sub.id, None, 10)
    assert {d.state for d in abandoned} == {DeliveryState.ABANDONED}
    # A disabled subscription gets no new events and none of its deliveries are sent.
    await enqueue_one(store, at(7))
    await store.complete([succeeded(await claim_one(store, at(7)))], at(7))
    assert len(await hooks(store).list_deliveries(sub.id, None, 10)) == 2
    enabled = await hooks(store).update_subscription(sub.id, spec(), True, at(8))
    assert enabled.enabled
    assert enabled.disabled_reason is None
    assert enabled.consecutive_failures == 0


async def test_previous_secret_signs_until_its_grace_ends(store: Store) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    fresh = new_secret(b"f" * 32)
    await hooks(store).rotate_subscription_secret(sub.id, fresh, 60.0, T0)
    for second in (1, 100):
        await enqueue_one(store, at(second))
        await store.complete([succeeded(await claim_one(store, at(second)))], at(second))
    [during] = await hooks(store).claim_deliveries(1, 30.0, at(1))
    assert during.keys.all() == (fresh, SECRET)
    [after] = await hooks(store).claim_deliveries(1, 30.0, at(100))
    assert after.keys.all() == (fresh,)


async def test_a_disabled_subscriptions_deliveries_wait_until_it_is_enabled(
    store: Store,
) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    await enqueue_one(store, T0)
    await store.complete([succeeded(await claim_one(store, T0))], at(1))
    await hooks(store).update_subscription(sub.id, spec(), False, at(2))
    assert await hooks(store).claim_deliveries(10, 30.0, at(3)) == []
    await hooks(store).update_subscription(sub.id, spec(), True, at(4))
    [claimed] = await hooks(store).claim_deliveries(10, 30.0, at(5))
    assert claimed.delivery.subscription_id == sub.id


async def test_finished_deliveries_are_pruned_after_the_retention(store: Store) -> None:
    sub = await hooks(store).create_subscription(spec(), SECRET, T0)
    for second in (0, 1):
        await enqueue_one(store, at(second))
        await store.complete([succeeded(await claim_one(store, at(second)))], at(second))
    [first] = await hooks(store).claim_deliveries(1, 30.0, at(2))
    done = DeliveryResult(first.delivery.id, 1, True, 200, None)
    assert await recorded(store, done, 5, at(3))
    # Only the delivered one goes; the pending one stays however old it is.
    assert await hooks(store).prune_deliveries(at(100), 10) == 1
    [left] = await hooks(store).list_deliveries(sub.id, None, 10)
    assert left.state is DeliveryState.PENDING
    assert await hooks(store).prune_deliveries(at(100), 10, leader_term=999) == 0


# -- the SQL copies of EVENT_OF_RUN_STATE (issue 26) ----------------------------------
# The completion and the reaper write the outbox in SQL, each with a CASE mapping the
# run's new state to its event: four copies of the domain table (two per dialect), and
# the statements that move runs into one state only (a fail-fast, a cancel, a skip)
# write that state and its event as literals. These tests parse every copy, so a change
# to the table that misses one fails here.

_RUN_EVENT_CASE = re.compile(
    r"CASE\s+(?P<operand>[^\s].*?)\s+(?P<arms>(?:WHEN\s+'[a-z_]+'\s+THEN\s+'run\.[a-z_.]+'\s+)+)"
    r"END",
    re.DOTALL,
)
_ARM = re.compile(r"WHEN\s+'([a-z_]+)'\s+THEN\s+'(run\.[a-z_.]+)'")
# Where the copies are: a query that writes a run's event must be listed here.
_MAPPING_COPIES = {"complete", "complete_judging", "reap"}  # queries.py PLANNED_PER_FLAG
# The one-state writers, and the state each writes (tests/contract/
# test_store_outcome_events.py drives each of them on both stores).
_LITERAL_COPIES = {
    "breaker_fail_fast": "failed",
    "release": "cancelled",  # a released run asked to cancel
    "cancel_waiting": "cancelled",
    "expire_deadlines": "cancelled",
    "cancel_workflow_run": "cancelled",
    "overlap_skip": "skipped",
    "settle_step": "skipped",  # a skipped step (a map's settling writes none)
}


def _run_event_cases(sql: str) -> list[dict[str, str]]:
    return [dict(_ARM.findall(m["arms"])) for m in _RUN_EVENT_CASE.finditer(sql)]


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_every_sql_copy_of_the_run_event_mapping_is_the_domain_table(dialect: str) -> None:
    table = {state: event.value for state, event in EVENT_OF_RUN_STATE.items()}
    found = {}
    for name, sql in load_queries(dialect).items():
        if cases := _run_event_cases(sql):
            found[name] = cases
    assert set(found) == _MAPPING_COPIES, "a query maps run states to events: list it"
    for name, cases in found.items():
        assert cases == [table], f"{dialect} {name}: its CASE is not EVENT_OF_RUN_STATE"


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_every_query_writing_a_run_event_is_pinned(dialect: str) -> None:
    """A new statement that writes run events to the outbox must be added to the
    copies above (and so to these tests)."""
    writers = {
        name
        for name, sql in load_queries(dialect).items()
        if "INSERT INTO rota_webhook_deliveries" in sql and "run_state" in sql and "'run." in sql
    }
    assert writers == _MAPPING_COPIES | set(_LITERAL_COPIES)


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
@pytest.mark.parametrize("query", sorted(_LITERAL_COPIES))
def test_a_one_state_outbox_writes_the_event_its_state_maps_to(dialect: str, query: str) -> None:
    sql = load_queries(dialect)[query]
    [(event, state)] = re.findall(
        r"SELECT s\.id, '(run\.[a-z_.]+)', \w+\.id, \w+\.namespace, \w+\.handler, \w+\.queue,"
        r"\s+'([a-z_]+)'",
        sql,
    )
    assert state == _LITERAL_COPIES[query]
    assert EVENT_OF_RUN_STATE[state].value == event
    assert f",{event}," in sql.replace("%%", "%")  # the subscription match names it too


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
@pytest.mark.parametrize("query", sorted(_MAPPING_COPIES))
def test_the_mapping_copies_fall_back_to_the_broader_event(dialect: str, query: str) -> None:
    """domain/webhooks.py delivered_as in SQL: the join also takes a subscription that
    names only the broader type, and the row written then carries that type."""
    sql = " ".join(load_queries(dialect)[query].replace("%%", "%").split())
    [(narrow, broad)] = BROADER_EVENT.items()  # the SQL spells one fallback
    alias = "d" if dialect == "postgres" else "e"
    assert f"OR ({alias}.event_type = '{narrow}' AND s.event_types LIKE '%,{broad},%')" in sql, (
        "the join takes the broader type's subscribers"
    )
    assert (
        f"CASE WHEN s.event_types LIKE '%,' || {alias}.event_type || ',%'"
        f" THEN {alias}.event_type ELSE '{broad}' END" in sql
    ), "the row carries the broader type for them"
