"""A small HTTP client for rota's API, used by the ``rota`` CLI (and handy in scripts).

Every method returns the decoded JSON body. A problem response raises :class:`ApiError`
carrying the RFC 9457 body; a server that cannot be reached raises
:class:`ServerUnreachable`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from rota.endpoint import DEFAULT_URL
from rota.errors import RotaError


class ApiError(RotaError):
    def __init__(self, status: int, problem: Mapping[str, Any]) -> None:
        self.status = status
        self.problem = dict(problem)
        detail = problem.get("detail") or problem.get("title") or f"HTTP {status}"
        super().__init__(f"{detail} (HTTP {status})")


class ServerUnreachable(RotaError):
    pass


class RotaClient:
    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RotaClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        clean = {k: v for k, v in (params or {}).items() if v is not None and v != []}
        try:
            response = self._http.request(
                method, path, params=clean, json=json, headers=dict(headers or {})
            )
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"cannot reach the rota server at {self.url} ({exc})") from None
        if response.status_code >= 400:
            try:
                problem = response.json()
            except ValueError:
                problem = {"detail": response.text[:200] or response.reason_phrase}
            raise ApiError(response.status_code, problem if isinstance(problem, dict) else {})
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    # -- jobs -------------------------------------------------------------------------
    def list_jobs(self, namespace: str | None = None) -> Any:
        return self.request("GET", "/api/v1/jobs", params={"namespace": namespace})["items"]

    def get_job(self, name: str, namespace: str = "default") -> Any:
        return self.request("GET", f"/api/v1/jobs/{name}", params={"namespace": namespace})

    def create_job(self, job: Mapping[str, Any]) -> Any:
        return self.request("POST", "/api/v1/jobs", json=dict(job))

    def update_job(self, name: str, changes: Mapping[str, Any], namespace: str = "default") -> Any:
        return self.request(
            "PATCH", f"/api/v1/jobs/{name}", params={"namespace": namespace}, json=dict(changes)
        )

    def delete_job(self, name: str, namespace: str = "default") -> None:
        self.request("DELETE", f"/api/v1/jobs/{name}", params={"namespace": namespace})

    def set_paused(self, name: str, paused: bool, namespace: str = "default") -> Any:
        verb = "pause" if paused else "resume"
        return self.request("POST", f"/api/v1/jobs/{name}/{verb}", params={"namespace": namespace})

    def trigger(
        self,
        name: str,
        payload: Any = None,
        *,
        namespace: str = "default",
        idempotency_key: str | None = None,
    ) -> int:
        body = {"payload": payload} if payload is not None else None
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        answer = self.request(
            "POST",
            f"/api/v1/jobs/{name}/trigger",
            params={"namespace": namespace},
            json=body,
            headers=headers,
        )
        return int(answer["run_id"])

    # -- runs -------------------------------------------------------------------------
    def list_runs(self, **filters: Any) -> Any:
        return self.request("GET", "/api/v1/runs", params=filters)

    def get_run(self, run_id: int) -> Any:
        return self.request("GET", f"/api/v1/runs/{run_id}")

    def run_logs(self, run_id: int) -> Any:
        return self.request("GET", f"/api/v1/runs/{run_id}/logs")["lines"]

    def cancel_run(self, run_id: int) -> Any:
        return self.request("POST", f"/api/v1/runs/{run_id}/cancel")

    def requeue_run(self, run_id: int) -> int:
        return int(self.request("POST", f"/api/v1/runs/{run_id}/requeue")["new_run_id"])

    def list_dead(self, **filters: Any) -> Any:
        return self.request("GET", "/api/v1/dlq", params=filters)

    def replay_dead(self, run_ids: list[int]) -> Any:
        if len(run_ids) == 1:
            answer = self.request("POST", f"/api/v1/dlq/{run_ids[0]}/replay")
            return [{"run_id": run_ids[0], "new_run_id": answer["new_run_id"], "error": None}]
        return self.request("POST", "/api/v1/dlq/replay", json={"run_ids": run_ids})["results"]

    # -- cluster ----------------------------------------------------------------------
    def list_workers(self) -> Any:
        return self.request("GET", "/api/v1/workers")["items"]

    def drain_worker(self, node_id: str) -> Any:
        return self.request("POST", f"/api/v1/workers/{node_id}/drain")

    def resume_worker(self, node_id: str) -> Any:
        return self.request("POST", f"/api/v1/workers/{node_id}/resume")

    def dev_token(self, **request: Any) -> Any:
        return self.request("POST", "/dev/token", json=request)
