"""examples/fastapi_app.py runs as docs/fastapi.md prints it: uvicorn serves it, a
`rota worker` runs its welcomes, and a signup refused by its own transaction (the email
is taken) leaves no run behind. Real processes on a fresh PostgreSQL database."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import rota
from tests.api.test_cli_e2e import free_port
from tests.conftest import fresh_database
from tests.helpers import REPO, stop_gracefully, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(90)]


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("rota_fastapi_example") as url:
        yield url


def start(command: list[str], database: str, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTA_")}
    env["DATABASE_URL"] = database
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=out)


def test_the_example_signs_up_and_welcomes(database: str, tmp_path: Path):
    port = free_port()
    bin_dir = Path(sys.executable).parent
    web = start(
        [str(bin_dir / "uvicorn"), "examples.fastapi_app:api", "--port", str(port)],
        database,
        tmp_path / "web.log",
    )
    worker = start(
        [str(bin_dir / "rota"), "worker", "--app", "examples.fastapi_app:app"],
        database,
        tmp_path / "worker.log",
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def answering() -> bool:
            assert web.poll() is None, (tmp_path / "web.log").read_text()
            try:
                return httpx.get(f"{base}/docs", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(answering, timeout=30, what="uvicorn to serve the example")
        signup = httpx.post(f"{base}/signups", json={"email": "ada@example.com"}, timeout=10)
        assert signup.status_code == 201, signup.text
        run_id = signup.json()["welcome_run"]
        again = httpx.post(f"{base}/signups", json={"email": "ada@example.com"}, timeout=10)
        assert again.status_code == 409
        assert again.json() == {"detail": "ada@example.com has signed up already"}

        def welcomed() -> dict[str, object] | None:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            run = httpx.get(f"{base}/runs/{run_id}", timeout=10).json()
            return run if run["state"] == "succeeded" else None

        try:
            run = wait_until(welcomed, timeout=30, what="the worker to welcome ada")
        except AssertionError as exc:
            log = (tmp_path / "worker.log").read_text()
            raise AssertionError(f"{exc}; the worker's log:\n{log}") from None
        assert run["result"] == "welcomed ada@example.com"
        # The refused signup's run was rolled back with it.
        assert httpx.get(f"{base}/runs/{run_id + 1}", timeout=10).status_code == 404
        app = rota.App(database)
        try:
            assert [r.payload for r in app.list_runs()] == [{"email": "ada@example.com"}]
        finally:
            app.close()
    finally:
        stop_gracefully(worker)
        stop_gracefully(web)
