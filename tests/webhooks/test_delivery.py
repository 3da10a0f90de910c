"""Delivering the outbox to a local receiver: every request signed, retries with the
injected clock while the receiver is down, redirects refused (both stores)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import structlog.testing

from rota.clock import FakeClock
from rota.domain.webhooks import DeliveryState, EventType, SubscriptionSpec
from rota.engine.webhook_delivery import Deliverer
from rota.services.webhooks import Webhooks, WithSecret
from rota.store.port import Store
from rota.store.sql_store import SqlStore

from .receiver import Receiver, receiving
from .support import ADMIN, finish_runs, local_settings

T0 = datetime(2030, 1, 1, 12, tzinfo=UTC)


async def _subscribe(webhooks: Webhooks, url: str) -> WithSecret:
    spec = SubscriptionSpec("default", url, (EventType.RUN_SUCCEEDED,))
    return await webhooks.create(ADMIN, spec)


def _ids(receiver: Receiver) -> list[str]:
    return [r.headers["webhook-id"] for r in receiver.received]


async def test_every_delivery_arrives_signed(store: Store, db_url: str) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    with receiving() as receiver:
        made = await _subscribe(Webhooks(store, settings, clock), receiver.url)
        run_ids = await finish_runs(store, 5, T0)
        deliverer = Deliverer(store, settings, clock)
        try:
            assert await deliverer.drain() == 5
        finally:
            await deliverer.close()
    assert len(receiver.received) == 5
    assert receiver.all_signed_by(made.secret)
    bodies = [json.loads(r.body) for r in receiver.received]
    assert sorted(b["data"]["run_id"] for b in bodies) == sorted(run_ids)
    assert {b["type"] for b in bodies} == {"run.succeeded"}
    assert {r.headers["webhook-timestamp"] for r in receiver.received} == {str(int(T0.timestamp()))}
    deliveries = await store.list_deliveries(made.subscription.id, None, 10)
    assert {d.state for d in deliveries} == {DeliveryState.DELIVERED}
    assert sorted(_ids(receiver)) == sorted(d.message_id for d in deliveries)


async def test_receiver_down_for_a_while_then_every_event_arrives(
    store: Store, db_url: str
) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    with receiving() as receiver:
        made = await _subscribe(Webhooks(store, settings, clock), receiver.url)
        await finish_runs(store, 4, T0)
        deliverer = Deliverer(store, settings, clock, draw=lambda: 1.0)
        try:
            receiver.stop()
            assert await deliverer.drain() == 4  # all four refused
            # The first retry is due 5 s later (draw 1.0: the whole step), not before.
            clock.advance(seconds=4)
            assert await deliverer.drain() == 0
            clock.advance(seconds=1)
            assert await deliverer.drain() == 4  # still down: the second try fails
            receiver.start()  # back, on the same port
            clock.advance(seconds=10)
            assert await deliverer.drain() == 4
        finally:
            await deliverer.close()
    assert len(receiver.received) == 4
    assert receiver.all_signed_by(made.secret)
    deliveries = await store.list_deliveries(made.subscription.id, None, 10)
    assert {(d.state, d.tries) for d in deliveries} == {(DeliveryState.DELIVERED, 3)}
    assert sorted(_ids(receiver)) == sorted(d.message_id for d in deliveries)


async def test_a_redirect_is_a_failed_try_and_is_not_followed(store: Store, db_url: str) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    with receiving() as receiver:
        receiver.status = 302
        made = await _subscribe(Webhooks(store, settings, clock), receiver.url)
        await finish_runs(store, 1, T0)
        deliverer = Deliverer(store, settings, clock)
        try:
            assert await deliverer.drain() == 1
        finally:
            await deliverer.close()
    assert len(receiver.received) == 1  # asked once; the Location was never followed
    [delivery] = await store.list_deliveries(made.subscription.id, None, 10)
    assert delivery.state is DeliveryState.PENDING
    assert delivery.last_status == 302
    assert delivery.last_error == "HTTP 302: redirects are not followed"
    assert delivery.next_attempt_at > T0 + timedelta(seconds=2)


async def test_rotation_signs_with_both_secrets(store: Store, db_url: str) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    webhooks = Webhooks(store, settings, clock)
    with receiving() as receiver:
        made = await _subscribe(webhooks, receiver.url)
        rotated = await webhooks.rotate_secret(ADMIN, made.subscription.id)
        await finish_runs(store, 1, T0)
        deliverer = Deliverer(store, settings, clock)
        try:
            assert await deliverer.drain() == 1
        finally:
            await deliverer.close()
    assert rotated.secret != made.secret
    assert receiver.all_signed_by(made.secret)
    assert receiver.all_signed_by(rotated.secret)
    assert len(receiver.received[0].headers["webhook-signature"].split(" ")) == 2


async def test_no_secret_in_what_delivery_logs(store: Store, db_url: str) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    with receiving() as receiver:
        made = await _subscribe(Webhooks(store, settings, clock), receiver.url)
        await finish_runs(store, 2, T0)
        receiver.status = 500
        deliverer = Deliverer(store, settings, clock)
        try:
            with structlog.testing.capture_logs() as logged:
                assert await deliverer.drain() == 2
        finally:
            await deliverer.close()
    assert [entry["event"] for entry in logged] == ["webhook delivery failed"] * 2
    secret_key = made.secret.removeprefix("whsec_")
    signatures = {r.headers["webhook-signature"] for r in receiver.received}
    for entry in logged:
        text = repr(entry)
        assert secret_key not in text
        assert not any(signature in text for signature in signatures)
