"""``rota jobs backfill`` end to end against a live server (tests/api/test_cli_e2e.py's
fixture): a DST week, twice, and the refusals."""

from __future__ import annotations

import json

import pytest

from tests.api.test_cli_e2e import rota, server

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the fixture, used by name

WEEK = ("--from", "2026-10-19T00:00+02:00", "--to", "2026-10-26T00:00+01:00")


def test_backfill_a_dst_week_twice_and_the_refusals(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    job = ("jobs", "create", "hourly", "--handler", "send-report", "--payload", "{}",
           "--cron", "0 * * * *", "--tz", "Europe/Berlin")  # fmt: skip
    made = rota(server, token, *job)
    assert made.returncode == 0, made.stderr
    first = rota(server, token, "jobs", "backfill", "hourly", *WEEK, "--max-in-flight", "2")
    assert first.returncode == 0, first.stderr
    assert "backfilled hourly: 169 slots, 169 runs created, 0 had one already" in first.stdout
    again = rota(server, token, "jobs", "backfill", "hourly", *WEEK, "--json")
    assert json.loads(again.stdout) == {"total": 169, "created": 0, "existing": 169}
    backwards = ("--from", WEEK[3], "--to", WEEK[1])
    refused = rota(server, token, "jobs", "backfill", "hourly", *backwards)
    assert refused.returncode == 1
    assert "from before to" in refused.stderr
    months = ("--from", "2026-01-01T00:00Z", "--to", "2026-03-01T00:00Z")
    unconfirmed = rota(server, token, "jobs", "backfill", "hourly", *months)
    assert unconfirmed.returncode == 1
    assert "slot count: 1416" in unconfirmed.stderr
    assert "--yes" in unconfirmed.stderr
    naive = rota(server, token, "jobs", "backfill", "hourly", "--from", "2026-01-01", "--to", "x")
    assert naive.returncode == 2
    assert "no UTC offset" in naive.stderr
