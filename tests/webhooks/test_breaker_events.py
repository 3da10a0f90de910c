"""breaker.opened and breaker.closed: written to the outbox in the transaction that
moves the breaker, once per transition, and delivered signed to a local receiver
(both stores)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from rota.clock import FakeClock
from rota.domain.breakers import Breaker
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.webhooks import EventType, SubscriptionSpec
from rota.engine.webhook_delivery import Deliverer
from rota.errors import InvalidArgument
from rota.services.webhooks import Webhooks
from rota.store.port import ClaimRequest, Store
from rota.store.sql_store import SqlStore

from .receiver import receiving
from .support import ADMIN, local_settings

T0 = datetime(2030, 1, 1, 12, tzinfo=UTC)


async def _attempt(store: Store, second: int, ok: bool, key: str = "host-a") -> None:
    now = T0 + timedelta(seconds=second)
    await store.enqueue([NewRun(handler="charge", payload_json="{}", breaker_key=key)], now)
    [claimed] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0), now)
    state, outcome = (
        (RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED)
        if ok
        else (RunState.FAILED, AttemptOutcome.FAILED)
    )
    await store.complete([Outcome(claimed.run_id, claimed.fence, state, outcome, "null")], now)


async def test_breaker_opened_is_delivered_once_per_opening(store: Store, db_url: str) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    await store.set_breaker_rule("charge", Breaker(failures=2, cool_down=10))
    with receiving() as receiver:
        webhooks = Webhooks(store, settings, clock)
        spec = SubscriptionSpec("default", receiver.url, (EventType.BREAKER_OPENED,))
        made = await webhooks.create(ADMIN, spec)
        await _attempt(store, 0, ok=False)
        await _attempt(store, 1, ok=False)  # opens it: one event
        await _attempt(store, 12, ok=False)  # the probe fails: reopens, a second event
        await _attempt(store, 30, ok=True)  # a probe succeeds: closed, no event
        await _attempt(store, 31, ok=False)  # one failure: closed, no event
        clock.set(T0 + timedelta(seconds=32))
        deliverer = Deliverer(store, settings, clock)
        try:
            assert await deliverer.drain() == 2
        finally:
            await deliverer.close()
    assert receiver.all_signed_by(made.secret)
    # Deliveries may arrive in any order: read them in the order they happened.
    bodies = sorted((json.loads(r.body) for r in receiver.received), key=lambda b: b["timestamp"])
    assert [b["type"] for b in bodies] == ["breaker.opened", "breaker.opened"]
    assert [b["data"]["breaker"] for b in bodies] == [
        {"key": "host-a", "cause": "2 consecutive failures within 60s"},
        {"key": "host-a", "cause": "a probe failed"},
    ]
    assert {b["data"]["handler"] for b in bodies} == {"charge"}
    assert [b["timestamp"] for b in bodies] == [
        (T0 + timedelta(seconds=s)).isoformat() for s in (1, 12)
    ]


async def test_run_events_of_a_subscription_without_breaker_opened_stay_alone(
    store: Store, db_url: str
) -> None:
    assert isinstance(store, SqlStore)
    await store.set_breaker_rule("charge", Breaker(failures=1))
    webhooks = Webhooks(store, local_settings(db_url), FakeClock(T0))
    spec = SubscriptionSpec("default", "http://127.0.0.1:9/hook", (EventType.RUN_FAILED,))
    made = await webhooks.create(ADMIN, spec)
    await _attempt(store, 0, ok=False)
    deliveries = await store.list_deliveries(made.subscription.id, None, 10)
    assert [d.event_type for d in deliveries] == [EventType.RUN_FAILED]
    assert deliveries[0].event_data is None  # a plain run event: its data are the run


async def test_breaker_closed_is_written_when_a_probe_succeeds_and_on_a_reset(
    store: Store, db_url: str
) -> None:
    assert isinstance(store, SqlStore)
    await store.set_breaker_rule("charge", Breaker(failures=1, cool_down=10))
    webhooks = Webhooks(store, local_settings(db_url), FakeClock(T0))
    spec = SubscriptionSpec(
        "default", "http://127.0.0.1:9/hook", (EventType.BREAKER_OPENED, EventType.BREAKER_CLOSED)
    )
    made = await webhooks.create(ADMIN, spec)
    await _attempt(store, 0, ok=False)  # opens
    await _attempt(store, 12, ok=True)  # the probe succeeds: closes
    await _attempt(store, 13, ok=True)  # already closed: nothing
    await _attempt(store, 14, ok=False)  # opens again
    await store.reset_breaker("charge", "host-a", T0 + timedelta(seconds=15))
    await store.reset_breaker("charge", "host-a", T0 + timedelta(seconds=16))  # was closed
    deliveries = sorted(
        await store.list_deliveries(made.subscription.id, None, 10), key=lambda d: d.id
    )
    assert [d.event_type for d in deliveries] == [
        EventType.BREAKER_OPENED,
        EventType.BREAKER_CLOSED,
        EventType.BREAKER_OPENED,
        EventType.BREAKER_CLOSED,
    ]
    closed_by_probe, closed_by_reset = deliveries[1], deliveries[3]
    assert closed_by_probe.event_data is not None
    assert closed_by_probe.event_data["breaker"] == {"key": "host-a", "cause": "a probe succeeded"}
    assert closed_by_probe.occurred_at == T0 + timedelta(seconds=12)
    # A reset has no run of its own: the breaker's latest run names namespace and queue.
    assert closed_by_reset.event_data is not None
    assert closed_by_reset.event_data["breaker"] == {
        "key": "host-a",
        "cause": "reset by an operator",
    }
    assert closed_by_reset.run_id == deliveries[2].run_id
    assert closed_by_reset.occurred_at == T0 + timedelta(seconds=15)
    body = json.loads(closed_by_reset.body())
    assert (body["type"], body["data"]["handler"]) == ("breaker.closed", "charge")


async def test_subscriptions_accept_breaker_closed_and_refuse_unknown_types(
    store: Store, db_url: str
) -> None:
    webhooks = Webhooks(store, local_settings(db_url), FakeClock(T0))
    accepted = SubscriptionSpec("default", "http://127.0.0.1:9/hook", ("breaker.closed",))
    made = await webhooks.create(ADMIN, accepted)
    assert made.subscription.event_types == (EventType.BREAKER_CLOSED,)
    with pytest.raises(InvalidArgument, match=r"breaker\.shut.*breaker\.closed"):
        SubscriptionSpec("default", "http://127.0.0.1:9/hook", ("breaker.shut",))
