"""A scheduled job's runs inherit its owner and labels (issue 29), on both stores; a
change to them applies to the slots planned after it."""

from __future__ import annotations

from datetime import timedelta

from rota.domain.runs import RunFilter
from rota.services import schedules
from rota.store.port import Store
from tests.schedules.conftest import T0, make_job, planner


async def test_planned_runs_carry_the_jobs_owner_and_labels(store: Store, clock, registry):
    job = await make_job(
        store, clock, registry, "hourly", cron="0 * * * *", owner="ops", labels={"env": "prod"}
    )
    clock.set(T0 + timedelta(hours=1))
    await planner(store).tick(clock.now())
    await schedules.update_job(store, clock, "default", "hourly", labels={"env": "dev"})
    clock.set(T0 + timedelta(hours=2))
    await planner(store).tick(clock.now())
    runs = [r for r in await store.list_runs(RunFilter(limit=10)) if r.job_id == job.id]
    assert [(r.slot_at, r.owner, r.labels) for r in sorted(runs, key=lambda r: r.id)] == [
        (T0 + timedelta(hours=1), "ops", (("env", "prod"),)),
        (T0 + timedelta(hours=2), "ops", (("env", "dev"),)),
    ]
