"""The delivering process SIGKILLed mid-delivery: every event still arrives at least
once, under the same webhook-id (real worker processes, both stores)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

import rota
from rota.clock import SystemClock
from rota.domain.webhooks import DeliveryState, EventType, SubscriptionSpec
from rota.services.webhooks import Webhooks
from rota.store.port import Store
from rota.store.sql_store import SqlStore
from tests.helpers import WorkerProcesses, eventually

from .receiver import receiving
from .support import ADMIN, local_settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]
WEBHOOK_ENV = {
    "ROTA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1",
    # A try times out after 2 s; its lease (2 * timeout + 1) ends 5 s after the claim.
    "ROTA_WEBHOOK_TIMEOUT_SECONDS": "2",
    "ROTA_POLL_SECONDS": "0.1",
}


async def test_deliverer_killed_mid_delivery_every_event_arrives_with_its_id(
    store: Store,
    db_url: str,
    process_app: rota.App,
    worker_processes: WorkerProcesses,
    marks: Path,
) -> None:
    assert isinstance(store, SqlStore)
    with receiving() as receiver:
        webhooks = Webhooks(store, local_settings(db_url), SystemClock())
        spec = SubscriptionSpec("default", receiver.url, (EventType.RUN_SUCCEEDED,))
        made = await webhooks.create(ADMIN, spec)
        receiver.holding.set()  # the first deliverer's requests hang until it is killed
        first = worker_processes.start("w-first", extra_env=WEBHOOK_ENV)
        run_ids = await asyncio.to_thread(
            process_app.enqueue_many, [{"handler": "record", "payload": {"n": n}} for n in range(3)]
        )
        assert await asyncio.to_thread(receiver.held.wait, 30), "no delivery was attempted"
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        with receiver.arrived:
            held = set(receiver.arrivals)
        receiver.holding.clear()
        receiver.released.set()  # the held handlers answer a dead connection

        async def all_delivered() -> bool:
            deliveries = await store.list_deliveries(made.subscription.id, None, 10)
            return len(deliveries) == 3 and all(
                d.state is DeliveryState.DELIVERED for d in deliveries
            )

        # Runs the first worker did not finish are finished by the second one too.
        worker_processes.start("w-second", extra_env=WEBHOOK_ENV)
        await eventually(all_delivered, timeout=60, what="every event delivered")
    deliveries = await store.list_deliveries(made.subscription.id, None, 10)
    assert sorted(d.run_id for d in deliveries) == sorted(run_ids)
    arrived = {r.headers["webhook-id"] for r in receiver.received}
    assert {d.message_id for d in deliveries} <= arrived
    assert receiver.all_signed_by(made.secret)
    # What the killed process was sending was sent again, under the same id.
    assert held
    assert all(receiver.arrivals.count(message_id) >= 2 for message_id in held)
    assert all(d.tries >= 2 for d in deliveries if d.message_id in held)
