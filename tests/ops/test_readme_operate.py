"""README's "Operate it" scrape example runs as printed against a live `rota server`
started as `make run` starts it (on a free port instead of 5017, so it never collides
with a running `make run`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.api.test_cli_e2e import free_port, start_server, wait_ready
from tests.helpers import REPO, stop_gracefully, wait_until

pytestmark = pytest.mark.slow


def scrape_block() -> str:
    readme = (REPO / "README.md").read_text()
    match = re.search(r"## Operate it.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert match, "README lost its Operate it example"
    return match[1]


def test_the_scrape_example_runs_as_printed(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    proc = start_server(tmp_path / "rota.db", port, log, "--app", "rota.examples:app")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, log)
        _wait_for_the_leaders_gauges(url)
        script = scrape_block().replace("127.0.0.1:5017", f"127.0.0.1:{port}")
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        stop_gracefully(proc)
    assert result.returncode == 0, result.stderr
    names = {line.split("{")[0].split()[0] for line in result.stdout.splitlines()}
    assert {"rota_leader", "rota_workers"} <= names, result.stdout


def _wait_for_the_leaders_gauges(url: str) -> None:
    """As a person would: the embedded leader publishes within moments of starting."""
    token = httpx.post(f"{url}/dev/token", json={"scopes": ["metrics:read"]}, timeout=5)
    headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
    wait_until(
        lambda: "rota_workers{" in httpx.get(f"{url}/metrics", headers=headers, timeout=5).text,
        timeout=30,
        what="the leader's cluster gauges",
    )
