"""The HTTP client's workflow definition calls (``/api/v1/workflows``), written once
like the rest (see rota.client.calls). Workflow runs: rota.client.calls."""

from __future__ import annotations

from typing import Any

from rota.client.calls import Call, JsonObject, Request, _new_key, _query


def save_workflow(definition: JsonObject) -> Call[JsonObject]:
    """Save (create or replace) a definition: ``{"name", "namespace"?, "steps": [...]}``.
    Saving the same definition again changes nothing, so a retry is safe."""
    saved = yield Request("POST", "/api/v1/workflows", body=definition, retryable=True)
    return dict(saved)


def list_workflows(namespace: str | None = None) -> Call[list[JsonObject]]:
    params = _query(namespace=namespace)
    page = yield Request("GET", "/api/v1/workflows", params, retryable=True)
    return list(page["items"])


def get_workflow(name: str, namespace: str = "default") -> Call[JsonObject]:
    params = {"namespace": namespace}
    found = yield Request("GET", f"/api/v1/workflows/{name}", params, retryable=True)
    return dict(found)


def start_workflow(
    name: str,
    payload: Any = None,
    namespace: str = "default",
    idempotency_key: str | None = None,
) -> Call[int]:
    """Start a run of a saved workflow; the workflow run's id. An ``Idempotency-Key``
    (made up when not given) makes a retry return the same workflow run."""
    path = f"/api/v1/workflows/{name}/runs"
    started = yield Request(
        "POST",
        path,
        params={"namespace": namespace},
        body={"payload": payload},
        headers={"Idempotency-Key": idempotency_key or _new_key()},
        retryable=True,
    )
    return int(started["workflow_run_id"])
