"""README's "Operate it" scrape example runs as printed against a live `rota server`
started as `make run` starts it (on a free port instead of 5017, so it never collides
with a running `make run`)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.api.test_cli_e2e import server as server
from tests.helpers import REPO

from .live import scrape_once_published

pytestmark = pytest.mark.slow


def scrape_block() -> str:
    readme = (REPO / "README.md").read_text()
    match = re.search(r"## Operate it.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert match, "README lost its Operate it example"
    return match[1]


def test_the_scrape_example_runs_as_printed(server: str) -> None:
    scrape_once_published(server)  # as a person would, a moment after `make run`
    script = scrape_block().replace("http://127.0.0.1:5017", server)
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    names = {line.split("{")[0].split()[0] for line in result.stdout.splitlines()}
    assert {"rota_leader", "rota_workers"} <= names, result.stdout
