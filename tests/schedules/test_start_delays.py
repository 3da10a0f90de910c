"""How late each slot's run started, on both stores (issue 25): the store's
recent_starts reads both homes, the API's job and the dashboard show it."""

from __future__ import annotations

from datetime import timedelta

from rota.services import schedules
from rota.store.port import ClaimRequest, Store
from tests.contract.support import succeeded
from tests.schedules.conftest import T0, make_job, planner

REQUEST = ClaimRequest("w", ("default",), 10, 3600)


async def test_recent_starts_give_slot_to_start_delays_from_both_homes(
    store: Store, clock, registry
) -> None:
    job = await make_job(store, clock, registry, "minutely", cron="* * * * *", overlap="skip")
    other = await make_job(store, clock, registry, "quiet", cron="0 0 1 1 *")
    await planner(store, horizon=200.0).tick(T0)  # minutes 1, 2 and 3, ahead
    [first] = await store.claim(REQUEST, T0 + timedelta(minutes=1, milliseconds=4))
    await store.complete([succeeded(first)], T0 + timedelta(minutes=1, seconds=1))  # history
    [second] = await store.claim(REQUEST, T0 + timedelta(minutes=2, milliseconds=250))
    assert await store.claim(REQUEST, T0 + timedelta(minutes=3)) == []  # skipped: 2 is live

    starts = await schedules.recent_starts(store, [job, other])
    assert starts[other.id] == []
    mine = starts[job.id]
    assert [s.slot_at for s in mine] == [T0 + timedelta(minutes=m) for m in (1, 2, 3)]
    assert [s.delay_seconds for s in mine] == [0.004, 0.25, None]
    assert second.run_id != first.run_id
    newest = await store.recent_starts([job.id], 2)
    assert [s.slot_at for s in newest[job.id]] == [T0 + timedelta(minutes=m) for m in (2, 3)]
