"""One bad job never stops the planner for the others (issue 8, finding 2).

Each poison here is real and put in place by SQL behind rota's back, the way an older
version, a hand edit or a validation gap would leave it: a definition that cannot be
read, a payload PostgreSQL's jsonb cannot hold, and rows the database refuses to insert.
The good jobs around it are planned in the same tick; the bad one is set aside with its
error recorded, retried later, and planned again once it is fixed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import psycopg

import rota
from rota.domain.jobs import planning_retry_delay
from rota.services import schedules
from rota.store.port import Store
from tests.schedules.conftest import T0, make_job, planner, slot_runs


def _execute(db_url: str, *statements: str) -> None:
    """Run SQL straight on the database, as someone bypassing rota would."""
    if db_url.startswith("sqlite"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        try:
            for statement in statements:
                conn.execute(statement)
            conn.commit()
        finally:
            conn.close()
    else:
        with psycopg.connect(db_url, autocommit=True) as pg:
            for statement in statements:
                pg.execute(statement)  # type: ignore[arg-type]


async def _three_jobs(store: Store, clock: rota.FakeClock, registry) -> tuple[int, int, int]:
    jobs = [
        await make_job(store, clock, registry, name, interval=60)
        for name in ("a-good", "b-bad", "c-good")
    ]
    return jobs[0].id, jobs[1].id, jobs[2].id


async def _assert_set_aside(store: Store, job_id: int, name: str, fragment: str) -> None:
    [job] = [j for j in await store.list_jobs() if j.id == job_id] or [None]
    if job is None:  # its definition cannot be read: look at the row through due_jobs
        return
    assert job.spec.name == name
    assert job.planning_error is not None
    assert fragment in job.planning_error
    assert job.planning_failed_at is not None
    assert job.planning_failures == 1
    assert await slot_runs(store, job_id) == []


async def test_a_job_that_cannot_be_read_is_set_aside(store: Store, db_url, clock, registry):
    good_a, bad, good_c = await _three_jobs(store, clock, registry)
    _execute(db_url, f'UPDATE rota_jobs SET spec = \'{{"name": "b-bad"}}\' WHERE id = {bad}')
    plan = planner(store)

    report = await plan.tick(T0 + timedelta(minutes=1))

    assert report.set_aside == 1
    assert await slot_runs(store, good_a) == [T0 + timedelta(minutes=1)]
    assert await slot_runs(store, good_c) == [T0 + timedelta(minutes=1)]
    [unreadable] = [j for j in await store.due_jobs(T0 + timedelta(hours=1), 10) if j.id == bad]
    assert "TypeError" in unreadable.error
    assert unreadable.planning_failures == 1
    # Until its retry instant it is not even looked at; the others carry on.
    report = await plan.tick(T0 + timedelta(minutes=1, seconds=30))
    assert report.set_aside == 0


async def test_a_payload_postgres_cannot_hold_is_set_aside(store: Store, db_url, clock, registry):
    """The probe's finding, bypassing the new edge check: a NUL in a job's payload. On
    PostgreSQL it used to fail every tick, for every namespace."""
    good_a, bad, good_c = await _three_jobs(store, clock, registry)
    job = await schedules.get_job(store, "default", "b-bad")
    spec = json.loads(rota.domain.jobs.spec_to_json(job.spec))
    spec["payload_json"] = '{"note": "nul \\u0000 here"}'
    literal = json.dumps(spec).replace("'", "''")
    _execute(db_url, f"UPDATE rota_jobs SET spec = '{literal}' WHERE id = {bad}")
    plan = planner(store)

    assert (await plan.tick(T0 + timedelta(minutes=1))).set_aside == 1
    assert (await plan.tick(T0 + timedelta(minutes=1, seconds=59))).set_aside == 0

    assert await slot_runs(store, good_a) == [T0 + timedelta(minutes=1)]
    assert await slot_runs(store, good_c) == [T0 + timedelta(minutes=1)]
    await _assert_set_aside(store, bad, "b-bad", "payload")
    set_aside = await schedules.get_job(store, "default", "b-bad")
    assert "nul" not in (set_aside.planning_error or "")  # the payload is never quoted


@contextmanager
def _refusing_runs_of(db_url: str, job_id: int) -> Iterator[None]:
    """A database trigger that refuses every run row of one job: the store's error."""
    if db_url.startswith("sqlite"):
        create = [
            f"CREATE TRIGGER rota_test_poison BEFORE INSERT ON rota_runs_live "
            f"WHEN NEW.job_id = {job_id} BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"
        ]
        drop = ["DROP TRIGGER IF EXISTS rota_test_poison"]
    else:
        create = [
            "CREATE OR REPLACE FUNCTION rota_test_poison() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN IF NEW.job_id = {job_id} THEN RAISE EXCEPTION 'poisoned row'; END IF; "
            "RETURN NEW; END $$",
            "CREATE TRIGGER rota_test_poison BEFORE INSERT ON rota_runs "
            "FOR EACH ROW EXECUTE FUNCTION rota_test_poison()",
        ]
        drop = [
            "DROP TRIGGER IF EXISTS rota_test_poison ON rota_runs",
            "DROP FUNCTION IF EXISTS rota_test_poison()",
        ]
    _execute(db_url, *create)
    try:
        yield
    finally:
        _execute(db_url, *drop)


async def test_rows_the_store_refuses_set_only_their_job_aside(
    store: Store, db_url, clock, registry
):
    good_a, bad, _good_c = await _three_jobs(store, clock, registry)
    plan = planner(store)
    with _refusing_runs_of(db_url, bad):
        report = await plan.tick(T0 + timedelta(minutes=1))
        assert (report.runs_created, report.set_aside, report.conflicts) == (2, 1, 0)
        await _assert_set_aside(store, bad, "b-bad", "poisoned row")
        job = await schedules.get_job(store, "default", "b-bad")
        assert job.planning_retry_at == T0 + timedelta(minutes=1) + planning_retry_delay(1)

        # Retried at its retry instant (it fails again: a longer wait), not before.
        before_retry = job.planning_retry_at - timedelta(seconds=1)
        assert (await plan.tick(before_retry)).set_aside == 0
        assert (await plan.tick(job.planning_retry_at)).set_aside == 1
        job = await schedules.get_job(store, "default", "b-bad")
        assert job.planning_failures == 2
        assert planning_retry_delay(2) == 2 * planning_retry_delay(1)

    # Fixed (the trigger is gone): once its next retry comes, it is planned and cleared.
    assert job.planning_retry_at is not None
    await plan.tick(job.planning_retry_at)
    job = await schedules.get_job(store, "default", "b-bad")
    assert job.planning_error is None
    assert job.planning_failures == 0
    assert await slot_runs(store, bad) != []
    assert len(await slot_runs(store, good_a)) >= 3


async def test_updating_a_set_aside_job_retries_it_at_once(store: Store, db_url, clock, registry):
    _, bad, _ = await _three_jobs(store, clock, registry)
    plan = planner(store)
    with _refusing_runs_of(db_url, bad):
        await plan.tick(T0 + timedelta(minutes=1))
    clock.set(T0 + timedelta(minutes=1, seconds=10))
    job = await schedules.update_job(store, clock, "default", "b-bad", priority=7)
    assert job.planning_error is None
    assert job.planning_retry_at is None
    await plan.tick(T0 + timedelta(minutes=2))
    assert await slot_runs(store, bad) != []
