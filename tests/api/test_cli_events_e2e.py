"""``rota events ...`` end to end against a live server (tests/api/test_cli_e2e.py's
fixture): subscribe a job, publish the same event twice, see one run and the event."""

from __future__ import annotations

import json

import pytest

from tests.api.test_cli_e2e import rota, server

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
