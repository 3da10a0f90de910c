"""How late each slot's run started, on both stores (issue 25): the store's
recent_starts reads both homes, the API's job and the dashboard show it."""

from __future__ import annotations

from datetime import timedelta

from rota.cli.jobs import _starts
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
    # What became of each slot: the skipped one says why, the others have no reason.
    assert [s.outcome for s in mine] == ["succeeded", "claimed", "skipped"]
    assert [s.reason for s in mine] == [None, None, "previous run still live"]
    assert [s.run_id for s in mine[:2]] == [first.run_id, second.run_id]
    assert second.run_id != first.run_id
    newest = await store.recent_starts([job.id], 2)
    assert [s.slot_at for s in newest[job.id]] == [T0 + timedelta(minutes=m) for m in (2, 3)]


async def test_slots_a_misfire_let_go_show_as_missed_between_planned_ones(
    store: Store, clock, registry
) -> None:
    job = await make_job(store, clock, registry, "minutely", cron="* * * * *", misfire="skip")
    plan = planner(store, horizon=70.0)
    await plan.tick(T0)  # plans minute 1
    await plan.tick(T0 + timedelta(minutes=4, seconds=30))  # after an outage: 5 is next

    starts = (await schedules.recent_starts(store, [job]))[job.id]
    assert [(s.slot_at, s.outcome) for s in starts] == [
        (T0 + timedelta(minutes=1), "pending"),
        (T0 + timedelta(minutes=2), "missed"),
        (T0 + timedelta(minutes=3), "missed"),
        (T0 + timedelta(minutes=4), "missed"),
        (T0 + timedelta(minutes=5), "pending"),
    ]
    assert all(s.run_id is None for s in starts if s.outcome == "missed")
    # The newest few only: the strip keeps its length whatever was missed.
    newest = (await schedules.recent_starts(store, [job], per_job=2))[job.id]
    assert [s.outcome for s in newest] == ["missed", "pending"]


def test_rota_jobs_show_says_what_became_of_each_slot() -> None:
    shown = _starts(
        [
            {"slot_at": "2026-06-01T12:00:02Z", "outcome": "succeeded", "delay_seconds": 0.004},
            {
                "slot_at": "2026-06-01T12:00:04Z",
                "outcome": "skipped",
                "delay_seconds": None,
                "reason": "previous run still live",
            },
            {"slot_at": "2026-06-01T12:00:06Z", "outcome": "missed", "delay_seconds": None},
        ]
    )
    assert shown.splitlines() == [
        "12:00:02Z succeeded +4 ms",
        "12:00:04Z skipped (previous run still live)",
        "12:00:06Z missed",
    ]
