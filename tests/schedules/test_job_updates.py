"""One merge for job updates, shared by App.update_schedule and PATCH /jobs/{name}."""

from __future__ import annotations

import pytest

from rota.domain.jobs import TriggerKind
from rota.errors import InvalidArgument
from rota.services import schedules
from tests.schedules.conftest import make_job


def _cron_spec(registry):
    return schedules.job_spec(registry, "nightly", "report", {"day": 1}, cron="0 2 * * *")


def test_a_new_schedule_replaces_the_old_one(registry):
    spec = _cron_spec(registry)
    every_minute = schedules.merge_job_changes(spec, {"interval_seconds": 60.0})
    assert (every_minute.kind, every_minute.cron, every_minute.interval_seconds) == (
        TriggerKind.INTERVAL,
        None,
        60.0,
    )
    manual = schedules.merge_job_changes(spec, {"cron": None})
    assert (manual.kind, manual.cron) == (TriggerKind.MANUAL, None)


def test_other_fields_change_alone_and_the_payload_is_encoded(registry):
    spec = _cron_spec(registry)
    changed = schedules.merge_job_changes(spec, {"priority": 9, "payload": {"day": 2}})
    assert (changed.priority, changed.payload_json) == (9, '{"day":2}')
    assert (changed.kind, changed.cron, changed.queue) == (spec.kind, spec.cron, spec.queue)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"colour": "red"}, "job change"),
        ({"priority": 99}, "priority"),
        ({"cron": "not cron"}, "cron"),
        ({"payload": {"x": 1}, "payload_json": "{}"}, "job change"),
    ],
)
def test_a_bad_change_is_refused_naming_its_field(registry, changes, field):
    with pytest.raises(InvalidArgument, match=field):
        schedules.merge_job_changes(_cron_spec(registry), changes)


async def test_the_library_update_moves_a_job_to_another_kind_of_schedule(store, clock, registry):
    await make_job(store, clock, registry, "nightly", cron="0 2 * * *")
    job = await schedules.update_job(store, clock, "default", "nightly", interval_seconds=300.0)
    assert (job.spec.kind, job.spec.cron, job.spec.interval_seconds) == (
        TriggerKind.INTERVAL,
        None,
        300.0,
    )
    assert job.next_fire_at is not None


async def test_with_a_registry_the_handler_and_payload_are_checked(store, clock, registry):
    await make_job(store, clock, registry, "nightly", cron="0 2 * * *")
    with pytest.raises(InvalidArgument, match="handler"):
        await schedules.update_job(
            store, clock, "default", "nightly", registry, handler="nobody-has-this"
        )
    job = await schedules.update_job(store, clock, "default", "nightly", registry, priority=2)
    assert job.spec.priority == 2
