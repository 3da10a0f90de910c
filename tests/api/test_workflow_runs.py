"""Workflow runs over the API: state, graph, cancel; and the CLI's renderings of the
graph."""

from __future__ import annotations

import rota
from rota.domain.workflow_graph import render
from tests.contract.support import claim_one, succeeded


async def test_a_workflow_run_its_graph_and_cancel(rota_app: rota.App, client, admin):
    flow = rota.Workflow("api-flow")
    first = flow.step("first", handler="anything")
    flow.map("each", handler="anything", over=first)
    rota_app.workflow(flow)
    workflow_run_id = await rota_app.start_workflow_async("api-flow", {"a": 1})

    found = await client.get(f"/api/v1/workflow-runs/{workflow_run_id}", headers=admin)
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["state"] == "running"
    assert [(s["name"], s["state"]) for s in body["steps"]] == [
        ("first", "pending"),
        ("each", "waiting"),
    ]

    graph = await client.get(f"/api/v1/workflow-runs/{workflow_run_id}/graph", headers=admin)
    assert graph.status_code == 200, graph.text
    assert graph.json()["edges"] == [{"from": "first", "to": "each"}]
    assert [n["kind"] for n in graph.json()["nodes"]] == ["step", "map"]

    cancel = f"/api/v1/workflow-runs/{workflow_run_id}/cancel"
    cancelled = await client.post(cancel, headers=admin)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "cancelled"
    assert {s["state"] for s in cancelled.json()["steps"]} == {"cancelled"}

    again = await client.post(cancel, headers=admin)  # cancelled already: the same answer
    assert again.status_code == 200, again.text

    listed = await client.get("/api/v1/workflow-runs?name=api-flow", headers=admin)
    assert [item["id"] for item in listed.json()["items"]] == [workflow_run_id]

    missing = await client.get("/api/v1/workflow-runs/999", headers=admin)
    assert missing.status_code == 404


async def test_a_caller_who_cannot_see_the_default_namespace_gets_404(
    rota_app: rota.App, client, auth
):
    flow = rota.Workflow("hidden")
    flow.step("only", handler="anything")
    rota_app.workflow(flow)
    workflow_run_id = await rota_app.start_workflow_async("hidden")
    headers = auth(namespaces=("team-a",))
    hidden = await client.get(f"/api/v1/workflow-runs/{workflow_run_id}", headers=headers)
    assert hidden.status_code == 404


def test_graph_renderings():
    graph = {
        "workflow_run_id": 7,
        "state": "running",
        "nodes": [
            {"id": "extract", "kind": "step", "state": "succeeded", "run_id": 1, "items": None},
            {
                "id": "load-region",
                "kind": "map",
                "state": "waiting",
                "run_id": 2,
                "items": {"succeeded": 2, "running": 1},
            },
        ],
        "edges": [{"from": "extract", "to": "load-region"}],
    }
    assert render(graph, "mermaid") == (
        "flowchart TD\n"
        '    s_extract["extract: succeeded"]\n'
        '    s_load_region["load-region: waiting [1 running, 2 succeeded]"]\n'
        "    s_extract --> s_load_region"
    )
    assert render(graph, "dot") == (
        "digraph workflow_run_7 {\n"
        '    "extract" [label="extract: succeeded"];\n'
        '    "load-region" [label="load-region: waiting [1 running, 2 succeeded]"];\n'
        '    "extract" -> "load-region";\n'
        "}"
    )
    assert render(graph, "text") == (
        "workflow run 7: running\n"
        "  extract: succeeded\n"
        "  load-region: waiting [1 running, 2 succeeded]  (after extract)"
    )


async def test_a_finished_workflow_run_refuses_a_cancel_with_409(rota_app: rota.App, client, admin):
    flow = rota.Workflow("done-flow")
    flow.step("only", handler="anything")
    rota_app.workflow(flow)
    workflow_run_id = await rota_app.start_workflow_async("done-flow")
    store = await rota_app.store()
    [step] = (await store.workflow_run(workflow_run_id)).steps
    await store.request_cancel(step.run_id, None)  # its only step ends: the run is over
    cancel = f"/api/v1/workflow-runs/{workflow_run_id}/cancel"
    ended = await client.post(cancel, headers=admin)
    assert ended.status_code == 200  # ended by a cancel: asking again is fine

    finished_id = await rota_app.start_workflow_async("done-flow")
    await store.complete([succeeded(await claim_one(store, None))], None)
    refused = await client.post(f"/api/v1/workflow-runs/{finished_id}/cancel", headers=admin)
    assert refused.status_code == 409, refused.text
    assert refused.json()["detail"] == f"cannot cancel workflow run {finished_id}: it is finished"
    assert (await client.get(f"/api/v1/workflow-runs/{finished_id}", headers=admin)).json()[
        "state"
    ] == "succeeded"
