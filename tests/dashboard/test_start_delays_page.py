"""How late a schedule's runs started, where people look (issue 25): the Jobs page, a
job's page and the API's job (which `rota jobs show` prints), on both stores."""

from __future__ import annotations

from datetime import timedelta

import rota
from rota.engine.planner import Planner
from rota.services import schedules
from rota.store.port import ClaimRequest

from .conftest import VIEWER, SignedIn, bearer, token


async def test_recent_starts_are_shown_beside_the_next_fires(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    client = await signed_in(VIEWER)
    store = await rota_app.store()
    spec = schedules.job_spec(rota_app.registry, "ticker", "anything", None, interval=60)
    job = await schedules.save_job(store, rota_app.clock, spec)
    slot = job.next_fire_at
    assert slot is not None
    await Planner(store, timedelta(seconds=120)).tick(await store.now(None))
    request = ClaimRequest("w", ("default",), 10, 60.0)
    [claimed] = await store.claim(request, slot + timedelta(milliseconds=7))
    assert claimed.slot_at == slot

    listing = (await client.get("/jobs")).text
    assert "Recent starts (slot to start)" in listing
    assert "last 7 ms · max 7 ms (1)" in listing
    # The strip of recent slots: each says what became of it, and how late it started.
    assert f"{slot.strftime('%H:%M:%S')} UTC claimed, started 7 ms late" in listing
    assert "Pause default/ticker" not in listing, "a viewer sees no action"
    operator = await signed_in(("jobs:read", "jobs:manage", "jobs:trigger"))
    actions = (await operator.get("/jobs")).text
    assert "Pause default/ticker" in actions
    assert "Trigger default/ticker now" in actions
    detail = (await client.get("/jobs/default/ticker")).text
    starts = detail.split('id="recent-starts"')[1]
    assert slot.strftime("%Y-%m-%d %H:%M:%S") in starts
    assert "7 ms" in starts
    shown = (await client.get("/api/v1/jobs/ticker", headers=bearer(token()))).json()
    first, *later = shown["recent_starts"]  # oldest slot first; later ones wait
    assert first["delay_seconds"] == 0.007
    assert (first["outcome"], first["run_id"]) == ("claimed", claimed.run_id)
    assert {start["outcome"] for start in later} <= {"pending"}
    assert all(start["delay_seconds"] is None for start in later)
