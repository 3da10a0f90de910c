"""A real `rota server` process for the browser tests, and Debian's chromium driven by
Playwright (never a downloaded browser: /usr/bin/chromium, installed by the Makefile
and .ci/run when missing)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

import rota
from rota.api.auth import mint_token
from rota.api.settings import ApiSettings
from tests.helpers import REPO, stop_gracefully, wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SIGNING_KEY = "dashboard-browser-tests-key-0123456789abcdef-xyz"
ADMIN = ("jobs:read", "jobs:trigger", "jobs:manage", "jobs:admin")


@dataclass(frozen=True)
class Server:
    url: str
    node_id: str
    db_url: str

    def token(self, scopes: tuple[str, ...] = ADMIN, subject: str = "ana") -> str:
        settings = ApiSettings(env="development", signing_key=SIGNING_KEY)
        return mint_token(settings, subject, datetime.now(UTC), scopes=scopes)

    def api(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token()}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=10, **kwargs)  # type: ignore[arg-type]

    def enqueue(self, handler: str, name: str) -> int:
        """A run of ``handler`` through the API: a manual job, triggered."""
        created = self.api("POST", "/api/v1/jobs", json={"name": name, "handler": handler})
        assert created.status_code == 201, created.text
        triggered = self.api("POST", f"/api/v1/jobs/{name}/trigger")
        assert triggered.status_code == 202, triggered.text
        return int(triggered.json()["run_id"])

    def logs(self, run_id: int) -> list[dict[str, object]]:
        answer = self.api("GET", f"/api/v1/runs/{run_id}/logs")
        assert answer.status_code == 200, answer.text
        return list(answer.json()["lines"])

    def start_workflow(self, name: str, payload: object = None) -> int:
        """A run of one of the test app's workflows (there is no HTTP route to start one
        here): through an App of this test process on the server's database."""
        from tests.apps.dashboard_app import add_workflows

        app = rota.App(settings=rota.Settings(database_url=self.db_url))
        try:
            add_workflows(app)
            return app.start_workflow(name, payload)
        finally:
            app.close()

    def run_state(self, run_id: int) -> str:
        return str(self.api("GET", f"/api/v1/runs/{run_id}").json()["run"]["state"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def rota_server(
    db_url: str, log: Path, app: str = "tests.apps.dashboard_app:app"
) -> Iterator[Server]:
    port = free_port()
    node_id = f"dash-{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ROTA_DATABASE_URL": db_url,
        "ROTA_ENV": "development",
        "ROTA_JWT_SECRET": SIGNING_KEY,
        "ROTA_API_RATE_PER_SECOND": "1000",
        "ROTA_API_RATE_BURST": "10000",
        "ROTA_POLL_SECONDS": "0.05",
        "ROTA_SHUTDOWN_GRACE_SECONDS": "2",  # a long run left behind must not hold the stop
        "ROTA_LEASE_SECONDS": "3",  # heartbeats (they carry cancel requests) every second
    }
    command = [
        sys.executable, "-m", "rota", "--log-level", "warning", "server",
        "--app", app, "--port", str(port), "--node-id", node_id,
    ]  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()[-3000:]}")
        try:
            return httpx.get(f"{url}/health/live", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(answering, timeout=60, what="the server to answer")
        yield Server(url, node_id, db_url)
    finally:
        stop_gracefully(proc)
