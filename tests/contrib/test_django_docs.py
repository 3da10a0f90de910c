"""docs/django.md's example runs as printed: its last three shell blocks (migrate and
enqueue; the worker, in a second terminal; the result), in the repository root, with
/tmp/shop.sqlite3 swapped for the test's own file."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO, stop_gracefully, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.DOTALL | re.MULTILINE)
PRINTS = re.compile(r"# prints (.*)$", re.MULTILINE)


def run(script: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_runs_as_printed(tmp_path: Path):
    text = (
        (REPO / "docs" / "django.md")
        .read_text()
        .replace("/tmp/shop.sqlite3", str(tmp_path / "shop.sqlite3"))
    )
    setup, worker, check = SH_BLOCK.findall(text)[-3:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROTA_", "DJANGO_"))}
    exports = "\n".join(line for line in setup.splitlines() if line.startswith("export"))
    assert run(setup, env).splitlines() == PRINTS.findall(setup)
    process = subprocess.Popen(
        ["bash", "-c", f"{exports}\nexec {worker.strip()}"], cwd=REPO, env=env
    )
    try:
        [expected] = PRINTS.findall(check)
        wait_until(
            lambda: run(f"{exports}\n{check}", env).strip() == expected,
            timeout=40,
            what="the worker to ship order A-1",
        )
    finally:
        stop_gracefully(process, timeout=20)
