"""``rota events ...`` end to end against a live server (tests/api/test_cli_e2e.py's
fixture): subscribe a job, publish the same event twice, see one run and the event;
the README's events and backfill examples run as printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.test_cli_e2e import rota, server
from tests.helpers import REPO

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the fixture, used by name


def test_publish_twice_one_run_then_list(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    job = ("jobs", "create", "receipts", "--handler", "send-report", "--payload", "{}")
    made = rota(server, token, *job)
    assert made.returncode == 0, made.stderr
    subscribed = rota(
        server, token, "events", "subscribe", "order.created", "receipts", "--where",
        '{"region": "eu"}',
    )  # fmt: skip
    assert subscribed.returncode == 0, subscribed.stderr
    assert "receipts runs on order.created" in subscribed.stdout
    publish = ("events", "publish", "order.created", "--id", "o-1", "--payload", '{"region":"eu"}')
    first = rota(server, token, *publish)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("published order.created id=o-1: runs ")
    again = rota(server, token, *publish)
    assert "already published" in again.stdout
    listed = json.loads(rota(server, token, "events", "list", "--json").stdout)
    assert [(e["event_id"], e["runs_created"]) for e in listed["items"]] == [("o-1", 1)]
    table = rota(server, token, "events", "subscriptions")
    assert "order.created" in table.stdout
    bad = rota(server, token, "events", "publish", "bad name!")
    assert bad.returncode == 1
    assert "name" in bad.stderr


def _sh_block(marker: str) -> str:
    readme = (REPO / "README.md").read_text()
    match = re.search(rf"```sh\n({re.escape(marker)}.*?)```", readme, re.DOTALL)
    assert match, f"README lost its {marker!r} example"
    return match[1]


@pytest.mark.parametrize("marker", ["# events:", "# backfill:"])
def test_the_readme_examples_run_as_printed(server: str, marker: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    env = {**os.environ, "ROTA_URL": server, "ROTA_TOKEN": token}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", _sh_block(marker)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    expected = "order-8813" if marker == "# events:" else "169 slots, 169 runs created"
    assert expected in result.stdout
