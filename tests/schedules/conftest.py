from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import rota
from rota.domain.jobs import Job
from rota.engine.planner import Planner
from rota.handlers import Registry, make_spec
from rota.services import schedules
from rota.store.port import Store

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


async def _noop(ctx: rota.RunContext, payload: Any) -> None:
    return None


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    for name in ("report", "cleanup"):
        registry.register(
            make_spec(
                _noop,
                name,
                queue="default",
                max_attempts=3,
                timeout=None,
                retry=None,
                priority=5,
                retry_timeouts=True,
            )
        )
    return registry


@pytest.fixture
def clock() -> rota.FakeClock:
    return rota.FakeClock(T0)


async def make_job(
    store: Store, clock: rota.Clock, registry: Registry, name: str, **options: Any
) -> Job:
    handler = options.pop("handler", "report")
    spec = schedules.job_spec(registry, name, handler, {"job": name}, **options)
    return await schedules.save_job(store, clock, spec)


async def slot_runs(store: Store, job_id: int) -> list[datetime]:
    """The slot of every run made for a job, in order (duplicates kept: tests count them)."""
    runs = await store.list_runs(rota.domain.runs.RunFilter(limit=1000))
    return sorted(r.slot_at for r in runs if r.job_id == job_id and r.slot_at is not None)


def planner(store: Store, horizon: float = 0.0) -> Planner:
    return Planner(store, timedelta(seconds=horizon))
