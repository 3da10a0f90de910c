"""README's "Webhooks" example runs as printed against a live `rota server` (its own
worker delivers), and the README's verify() accepts what arrives."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.test_cli_e2e import free_port, rota, wait_ready
from tests.helpers import REPO, wait_until

from .receiver import receiving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def _block(language: str, first_line: str) -> str:
    readme = (REPO / "README.md").read_text()
    for block in re.findall(rf"```{language}\n(.*?)```", readme, re.DOTALL):
        if block.startswith(first_line):
            return str(block)
    raise AssertionError(f"README lost its webhooks example ({first_line})")


def test_readme_webhooks_example_runs_and_verifies(tmp_path: Path) -> None:
    commands = _block("sh", "# webhooks:")
    namespace: dict[str, object] = {}
    exec(_block("python", "# verify.py"), namespace)
    verify = namespace["verify"]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    env = {
        **os.environ,
        "ROTA_DATABASE_URL": f"sqlite:///{tmp_path / 'rota.db'}",
        "ROTA_ENV": "development",
        "ROTA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1",
        "ROTA_POLL_SECONDS": "0.1",
    }
    env.pop("ROTA_JWT_SECRET", None)
    serve = ["server", "--port", str(port), "--app", "rota.examples:app"]
    command = [sys.executable, "-m", "rota", *serve]
    with log.open("ab") as out:
        server = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=out)
    try:
        wait_ready(url, server, log)
        token = rota(url, None, "token", "create").stdout.strip()
        with receiving() as receiver:
            shell_env = {
                **os.environ,
                "ROTA_URL": url,
                "ROTA_TOKEN": token,
                "RECEIVER_URL": receiver.url,
                # The venv's `rota` first, as for a user who installed it.
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            }
            ran = subprocess.run(
                ["bash", "-e", "-c", commands],
                env=shell_env,
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert ran.returncode == 0, ran.stderr
            [secret] = re.findall(r"secret: (whsec_\S+)", ran.stdout)
            # The run's event, then the redelivery: the same webhook-id twice.
            wait_until(lambda: receiver.arrivals.count("msg_1") >= 2, timeout=30, what="two")
            wait_until(lambda: len(receiver.received) >= 2, timeout=10, what="answered")
        for received in receiver.received:
            assert verify(secret, received.headers, received.body)  # type: ignore[operator]
            assert json.loads(received.body)["type"] == "run.succeeded"
        listed = json.loads(rota(url, token, "webhooks", "list", "--json").stdout)
        assert [s["enabled"] for s in listed] == [True]
        assert "whsec_" not in rota(url, token, "webhooks", "list").stdout
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
