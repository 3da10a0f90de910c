"""``rota runs bulk ...`` end to end against a live server (tests/api/test_cli_e2e.py's
fixture): the count, the confirmation (refused, given, skipped with --yes), the result."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from tests.api.test_cli_e2e import REPO, rota, server

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the fixture, used by name

LATER = "2099-01-01T00:00:00+00:00"  # never due while the test runs: they stay pending


def _rota_with_input(
    url: str, token: str, answer: str, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROTA_URL": url, "ROTA_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "rota", *args],
        env=env,
        cwd=REPO,
        input=answer,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bulk_cancel_asks_then_acts_and_delete_follows(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    headers = {"Authorization": f"Bearer {token}"}
    for n in range(3):
        body = {"handler": "export-csv", "payload": {"n": n}, "run_at": LATER, "queue": "bulk"}
        made = httpx.post(f"{server}/api/v1/runs", json=body, headers=headers, timeout=10)
        assert made.status_code == 201, made.text
    cancel = ("runs", "bulk", "cancel", "--queue", "bulk", "--state", "pending")
    refused = _rota_with_input(server, token, "n\n", *cancel)
    assert refused.returncode == 1, refused.stderr
    assert "3 runs match. Cancel them all?" in refused.stderr
    listed = rota(server, token, "runs", "list", "--queue", "bulk", "--json")
    assert {run["state"] for run in json.loads(listed.stdout)["items"]} == {"pending"}
    done = _rota_with_input(server, token, "y\n", *cancel)
    assert done.returncode == 0, done.stderr
    assert "cancelled 3 of 3 runs (0 skipped" in done.stdout
    listed = rota(server, token, "runs", "list", "--queue", "bulk", "--json")
    assert {run["state"] for run in json.loads(listed.stdout)["items"]} == {"cancelled"}
    nothing = rota(server, token, *cancel)
    assert (nothing.returncode, nothing.stdout.strip()) == (0, "no runs match: nothing to cancel")
    deleted = rota(server, token, "runs", "bulk", "delete", "--queue", "bulk", "--yes", "--json")
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout) == {
        "action": "delete",
        "matched": 3,
        "affected": 3,
        "skipped": 0,
        "batches": 1,
    }
    bad = rota(server, token, "runs", "bulk", "replay", "--state", "pending", "--yes")
    assert bad.returncode == 1
    assert "invalid state: 'pending'" in bad.stderr
    naive = rota(server, token, "runs", "bulk", "cancel", "--created-after", "2026-01-01")
    assert naive.returncode == 2
    assert "no UTC offset" in naive.stderr
