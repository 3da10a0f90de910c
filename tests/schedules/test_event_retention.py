"""The leader's pruning removes events older than event_retention_seconds (and not
younger ones), apart from the runs' own retention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rota.clock import FakeClock
from rota.config import Settings
from rota.domain.events import NewEvent
from rota.engine.housekeeping import Housekeeper
from rota.store.port import Store

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


async def test_events_past_their_retention_are_pruned(store: Store, db_url: str) -> None:
    events = store.events
    clock = FakeClock(NOW)
    for event_id, age in (("old", timedelta(hours=3)), ("young", timedelta(minutes=30))):
        payload = json.dumps({"id": event_id})
        await events.publish(NewEvent("order.created", event_id, payload), NOW - age)
    settings = Settings(database_url=db_url, event_retention_seconds=3600.0)
    await Housekeeper(store, settings, clock).prune_once()
    kept = await events.list_events(None, None, None, None, 10)
    assert [e.event_id for e in kept] == ["young"]
