"""Job templates on both stores: a job that declares parameters (a JSON Schema with
defaults) has its own payload and every trigger's checked and filled in; a misfit
names the parameter and writes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rota.domain.parameters import InvalidParameter
from rota.domain.runs import RunFilter
from rota.services import schedules
from rota.store.port import Store

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "table": {"type": "string"},
        "rows": {"type": "integer", "minimum": 1, "default": 100},
    },
    "required": ["table"],
}


async def test_a_template_job_fills_defaults_and_checks_each_trigger(store: Store, clock, registry):
    spec = schedules.job_spec(
        registry, "export", "report", {"table": "orders"}, parameters=PARAMETERS
    )
    job = await schedules.save_job(store, clock, spec)
    assert job.spec.parameters == PARAMETERS
    assert (await schedules.get_job(store, "default", "export")).spec.parameters == PARAMETERS

    run_id = await schedules.trigger_job(store, clock, "default", "export", {"table": "users"})
    run = await store.get_run(run_id)
    assert run is not None
    assert run.payload == {"table": "users", "rows": 100}
    own = await store.get_run(await schedules.trigger_job(store, clock, "default", "export"))
    assert own is not None
    assert own.payload == {"table": "orders", "rows": 100}

    with pytest.raises(InvalidParameter, match="invalid parameter 'table': expected a value"):
        await schedules.trigger_job(store, clock, "default", "export", {"rows": 5})
    with pytest.raises(InvalidParameter, match="invalid parameter 'rows': expected minimum 1"):
        await schedules.trigger_job(store, clock, "default", "export", {"table": "t", "rows": 0})
    assert len(await store.list_runs(RunFilter(limit=10))) == 2, "misfits wrote nothing"


@pytest.mark.parametrize(
    ("payload", "parameters", "named"),
    [
        ({}, PARAMETERS, "parameter 'table'"),
        ({"table": 1}, PARAMETERS, "parameter 'table': expected type string"),
        ({"table": "t"}, {"type": "array"}, '"type": "object"'),
        ({"table": "t"}, {"type": "object", "properties": {"a": {"type": "x"}}}, "JSON Schema"),
    ],
)
async def test_a_template_that_does_not_fit_is_refused(
    store: Store, clock, registry, payload: Any, parameters: Any, named: str
):
    # Refused while building the job: nothing reaches the store.
    with pytest.raises(ValueError, match=named):
        schedules.job_spec(registry, "export", "report", payload, parameters=parameters)
    assert await store.list_jobs() == []


async def test_changing_a_template_jobs_payload_must_still_fit(store: Store, clock, registry):
    spec = schedules.job_spec(registry, "export", "report", {"table": "t"}, parameters=PARAMETERS)
    await schedules.save_job(store, clock, spec)
    with pytest.raises(InvalidParameter, match="parameter 'table'"):
        await schedules.update_job(store, clock, "default", "export", payload={"rows": 3})
    job = await schedules.get_job(store, "default", "export")
    assert json.loads(job.spec.payload_json) == {"table": "t", "rows": 100}
