"""Workflow definitions over the API: saved (checked as the library checks them),
listed, shown and started by name; namespaces and scopes as for jobs; bad input is a
clear 422 naming the value, and nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

import rota
from rota.domain.runs import RunFilter

DEFINITION: dict[str, Any] = {
    "name": "nightly-etl",
    "steps": [
        {"name": "extract", "handler": "anything"},
        {"name": "each", "handler": "anything", "kind": "map", "over": "extract"},
        {
            "name": "report",
            "handler": "anything",
            "after": ["each"],
            "trigger": "all_done",
            "options": {"queue": "reports", "priority": 2},
        },
    ],
}


async def test_save_list_show_and_start_a_workflow(rota_app: rota.App, client, admin):
    saved = await client.post("/api/v1/workflows", json=DEFINITION, headers=admin)
    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert (body["namespace"], body["name"], body["version"]) == ("default", "nightly-etl", 1)
    assert [s["name"] for s in body["steps"]] == ["extract", "each", "report"]
    assert body["steps"][1]["over"] == "extract"

    changed = {**DEFINITION, "steps": DEFINITION["steps"][:2]}
    again = await client.post("/api/v1/workflows", json=changed, headers=admin)
    assert again.json()["version"] == 2

    listed = await client.get("/api/v1/workflows", headers=admin)
    assert [(w["name"], w["version"]) for w in listed.json()["items"]] == [("nightly-etl", 2)]
    shown = await client.get("/api/v1/workflows/nightly-etl", headers=admin)
    assert shown.status_code == 200, shown.text
    assert len(shown.json()["steps"]) == 2

    path = "/api/v1/workflows/nightly-etl/runs"
    started = await client.post(path, json={"payload": {"day": "2026-11-30"}}, headers=admin)
    assert started.status_code == 202, started.text
    workflow_run_id = started.json()["workflow_run_id"]
    view = await (await rota_app.store()).workflow_run(workflow_run_id)
    assert view.name == "nightly-etl"
    assert [step.state.value for step in view.steps] == ["pending", "waiting"]

    run = await client.get(f"/api/v1/workflow-runs/{workflow_run_id}", headers=admin)
    assert run.json()["namespace"] == "default"


async def test_a_definition_saved_in_code_starts_over_the_api(rota_app: rota.App, client, admin):
    flow = rota.Workflow("from-code")
    flow.step("only", handler="anything")
    await rota_app.workflow_async(flow)
    started = await client.post("/api/v1/workflows/from-code/runs", headers=admin)
    assert started.status_code == 202, started.text


def _with_steps(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"name": "bad", "steps": list(steps)}


BAD = [
    (
        _with_steps(
            {"name": "a", "handler": "anything", "after": ["c"]},
            {"name": "b", "handler": "anything", "after": ["a"]},
            {"name": "c", "handler": "anything", "after": ["b"]},
        ),
        "a → b → c → a",
    ),
    (_with_steps({"name": "a", "handler": "anything", "after": ["ghost"]}), "'ghost'"),
    (_with_steps({"name": "a", "handler": "anything", "after": ["a"]}), "not itself"),
    (
        _with_steps({"name": "a", "handler": "anything"}, {"name": "a", "handler": "anything"}),
        "a step name used once per workflow",
    ),
    (_with_steps({"name": "a", "handler": "anything", "kind": "map"}), "over"),
    (_with_steps({"name": "a", "handler": "nobody"}), "'nobody'"),
    (_with_steps({"name": "a", "handler": "anything", "options": {"colour": 1}}), "colour"),
    (_with_steps({"name": "a", "handler": "anything", "options": {"priority": 99}}), "99"),
    (_with_steps({"name": "a", "handler": "anything", "trigger": "sometimes"}), "sometimes"),
    (_with_steps(), "at least one step"),
    ({"name": "bad name!", "steps": [{"name": "a", "handler": "anything"}]}, "bad name!"),
    ({"name": "bad", "steps": [{"name": "a", "handler": "anything", "colour": 1}]}, "colour"),
    ({"name": "bad", "steps": "a"}, "steps"),
]


@pytest.mark.parametrize(("body", "named"), BAD)
async def test_a_definition_that_cannot_run_is_refused_naming_why(
    client, admin, body: dict[str, Any], named: str
):
    refused = await client.post("/api/v1/workflows", json=body, headers=admin)
    assert refused.status_code == 422, refused.text
    assert named in refused.json()["detail"]
    listed = await client.get("/api/v1/workflows", headers=admin)
    assert listed.json()["items"] == [], "nothing written"


async def test_bad_start_requests(client, admin):
    await client.post("/api/v1/workflows", json=DEFINITION, headers=admin)
    missing = await client.post("/api/v1/workflows/nothing/runs", headers=admin)
    assert missing.status_code == 404
    assert "'nothing'" in missing.json()["detail"]
    path = "/api/v1/workflows/nightly-etl/runs"
    extra = await client.post(path, json={"payload": 1, "more": 2}, headers=admin)
    assert extra.status_code == 422
    garbled = await client.post(
        path, content=b"{not json", headers={**admin, "Content-Type": "application/json"}
    )
    assert garbled.status_code == 400
    elsewhere = await client.post(f"{path}?namespace=other", headers=admin)
    assert elsewhere.status_code == 404


async def test_namespaces_and_scopes_as_for_jobs(rota_app: rota.App, client, auth):
    admin_a = auth(namespaces=("team-a",))
    in_a = {**DEFINITION, "namespace": "team-a"}
    assert (await client.post("/api/v1/workflows", json=in_a, headers=admin_a)).status_code == 200
    outside = await client.post("/api/v1/workflows", json=DEFINITION, headers=admin_a)
    assert outside.status_code == 404, "a namespace the key cannot reach is not there"

    reader_b = auth(scopes=("jobs:read",), namespaces=("team-b",))
    assert (await client.get("/api/v1/workflows", headers=reader_b)).json()["items"] == []
    hidden = await client.get("/api/v1/workflows/nightly-etl?namespace=team-a", headers=reader_b)
    assert hidden.status_code == 404

    reader_a = auth(scopes=("jobs:read",), namespaces=("team-a",))
    cannot_save = await client.post("/api/v1/workflows", json=in_a, headers=reader_a)
    assert cannot_save.status_code == 403
    path = "/api/v1/workflows/nightly-etl/runs?namespace=team-a"
    assert (await client.post(path, headers=reader_a)).status_code == 403

    trigger_a = auth(scopes=("jobs:read", "jobs:trigger"), namespaces=("team-a",))
    started = await client.post(path, headers=trigger_a)
    assert started.status_code == 202, started.text
    workflow_run_id = started.json()["workflow_run_id"]
    view = await (await rota_app.store()).workflow_run(workflow_run_id)
    assert view.namespace == "team-a"
    store = await rota_app.store()
    step_run = await store.get_run(view.steps[0].run_id or 0)
    assert step_run is not None
    assert step_run.namespace == "team-a"

    run_path = f"/api/v1/workflow-runs/{workflow_run_id}"
    assert (await client.get(run_path, headers=reader_a)).status_code == 200
    assert (await client.get(run_path, headers=reader_b)).status_code == 404
    assert (
        await client.post(f"{run_path}/cancel", headers=auth(namespaces=("team-b",)))
    ).status_code == 404
    runs_b = await client.get("/api/v1/workflow-runs", headers=reader_b)
    assert runs_b.json()["items"] == []
    runs_a = await client.get("/api/v1/workflow-runs?namespace=team-a", headers=reader_a)
    assert [r["id"] for r in runs_a.json()["items"]] == [workflow_run_id]


async def test_a_workflow_schedule_over_the_api(client, admin):
    scheduled = {
        **DEFINITION,
        "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Berlin", "payload": {"a": 1}},
    }
    saved = await client.post("/api/v1/workflows", json=scheduled, headers=admin)
    assert saved.status_code == 200, saved.text
    job = saved.json()["schedule"]
    assert (job["name"], job["handler"], job["cron"]) == (
        "workflow:nightly-etl",
        "rota.start-workflow",
        "0 2 * * *",
    )
    assert job["payload"] == {"workflow": "nightly-etl", "payload": {"a": 1}}
    listed = await client.get("/api/v1/workflows", headers=admin)
    assert listed.json()["items"][0]["schedule"]["next_fire_at"] == job["next_fire_at"]
    jobs = await client.get("/api/v1/jobs", headers=admin)
    assert [j["name"] for j in jobs.json()["items"]] == ["workflow:nightly-etl"]

    bad = {**DEFINITION, "name": "other", "schedule": {"cron": "0 2 * * *", "timezone": "X/Y"}}
    refused = await client.post("/api/v1/workflows", json=bad, headers=admin)
    assert refused.status_code == 422
    assert "X/Y" in refused.json()["detail"]
    missing = await client.get("/api/v1/workflows/other", headers=admin)
    assert missing.status_code == 404, "nothing written"
    buffered = {**DEFINITION, "name": "other", "schedule": {"cron": "0 2 * * *"}}
    buffered["schedule"]["overlap"] = "buffer_one"
    refused = await client.post("/api/v1/workflows", json=buffered, headers=admin)
    assert refused.status_code == 422
    assert "overlap" in refused.json()["detail"]
    assert (await client.get("/api/v1/workflows/other", headers=admin)).status_code == 404

    skipping = {**DEFINITION, "schedule": {"cron": "0 2 * * *", "overlap": "skip"}}
    saved = await client.post("/api/v1/workflows", json=skipping, headers=admin)
    assert saved.json()["schedule"]["payload"]["overlap"] == "skip"

    manual = await client.post("/api/v1/workflows", json=DEFINITION, headers=admin)
    assert manual.json()["schedule"] is None
    assert (await client.get("/api/v1/jobs", headers=admin)).json()["items"] == []


async def test_a_workflow_template_checks_and_fills_its_parameters(
    rota_app: rota.App, client, admin
):
    template = {
        **DEFINITION,
        "parameters": {
            "type": "object",
            "properties": {"day": {"type": "string"}, "rows": {"type": "integer", "default": 10}},
            "required": ["day"],
        },
    }
    saved = await client.post("/api/v1/workflows", json=template, headers=admin)
    assert saved.status_code == 200, saved.text
    assert saved.json()["parameters"]["required"] == ["day"]
    path = "/api/v1/workflows/nightly-etl/runs"
    missing = await client.post(path, json={"payload": {"rows": 5}}, headers=admin)
    assert missing.status_code == 422
    assert "parameter 'day'" in missing.json()["detail"]
    wrong = await client.post(path, json={"payload": {"day": 3}}, headers=admin)
    assert wrong.status_code == 422
    assert "parameter 'day': expected type string" in wrong.json()["detail"]
    runs = await client.get("/api/v1/workflow-runs", headers=admin)
    assert runs.json()["items"] == [], "nothing written"

    started = await client.post(path, json={"payload": {"day": "d"}}, headers=admin)
    assert started.status_code == 202, started.text
    store = await rota_app.store()
    steps = await store.list_runs(RunFilter(limit=10))
    assert [step.payload for step in steps] == [{"day": "d", "rows": 10}] * 3

    bad_schema = {**DEFINITION, "name": "other", "parameters": {"type": "string"}}
    refused = await client.post("/api/v1/workflows", json=bad_schema, headers=admin)
    assert refused.status_code == 422
    assert "parameters" in refused.json()["detail"]
    bad_slot = {**template, "name": "other", "schedule": {"cron": "0 2 * * *"}}
    refused = await client.post("/api/v1/workflows", json=bad_slot, headers=admin)
    assert refused.status_code == 422, "each slot's payload (none) lacks the day"
    assert "parameter 'day'" in refused.json()["detail"]


async def test_a_repeated_idempotency_key_starts_one_workflow_run(client, admin):
    await client.post("/api/v1/workflows", json=DEFINITION, headers=admin)
    path = "/api/v1/workflows/nightly-etl/runs"
    keyed = {**admin, "Idempotency-Key": "k-1"}
    first = await client.post(path, json={"payload": 1}, headers=keyed)
    again = await client.post(path, json={"payload": 1}, headers=keyed)
    assert first.json() == again.json()
    runs = await client.get("/api/v1/workflow-runs", headers=admin)
    assert len(runs.json()["items"]) == 1
    too_long = await client.post(path, headers={**admin, "Idempotency-Key": "k" * 256})
    assert too_long.status_code == 422


async def test_a_job_template_over_the_api(client, admin):
    job = {
        "name": "export",
        "handler": "anything",
        "payload": {"table": "orders"},
        "parameters": {
            "type": "object",
            "properties": {"table": {"type": "string"}, "rows": {"type": "integer", "default": 9}},
            "required": ["table"],
        },
    }
    made = await client.post("/api/v1/jobs", json=job, headers=admin)
    assert made.status_code == 201, made.text
    assert made.json()["payload"] == {"table": "orders", "rows": 9}
    assert made.json()["parameters"]["required"] == ["table"]
    path = "/api/v1/jobs/export/trigger"
    refused = await client.post(path, json={"payload": {"rows": 1}}, headers=admin)
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith("invalid parameter 'table'")
    triggered = await client.post(path, json={"payload": {"table": "t"}}, headers=admin)
    assert triggered.status_code == 202, triggered.text
    run_id = triggered.json()["run_id"]
    run = await client.get(f"/api/v1/runs/{run_id}", headers=admin)
    assert run.json()["run"]["payload"] == {"table": "t", "rows": 9}
    bad = {**job, "name": "other", "payload": {}}
    missing = await client.post("/api/v1/jobs", json=bad, headers=admin)
    assert missing.status_code == 422
    assert "parameter 'table'" in missing.json()["detail"]
