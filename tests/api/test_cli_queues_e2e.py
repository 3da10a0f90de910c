"""``rota queues ...`` end to end against a live server (tests/api/test_cli_e2e.py's
fixture, with its embedded worker): list, pause, see it paused, cap, resume; bad input
and a team's token are refused with a clear message."""

from __future__ import annotations

import json

import pytest

from tests.api.test_cli_e2e import rota, server

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the fixture, used by name


def test_list_pause_limit_resume(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    listed = json.loads(rota(server, token, "queues", "list", "--json").stdout)
    assert "default" in {q["name"] for q in listed}, "the embedded worker serves default"
    paused = rota(server, token, "queues", "pause", "default")
    assert paused.stdout.strip() == "default: paused", paused.stderr
    table = rota(server, token, "queues", "list")
    assert table.returncode == 0, table.stderr
    [line] = [row for row in table.stdout.splitlines() if " default " in row]
    assert "yes" in line
    capped = rota(server, token, "queues", "limit", "default", "4")
    assert capped.stdout.strip() == "default: at most 4 running", capped.stderr
    shown = json.loads(rota(server, token, "queues", "show", "default", "--json").stdout)
    assert (shown["paused"], shown["concurrency_limit"]) == (True, 4)
    assert shown["workers"], "the embedded worker serves it"
    assert "paused at" in rota(server, token, "queues", "show", "default").stdout
    uncapped = rota(server, token, "queues", "limit", "default", "none")
    assert uncapped.stdout.strip() == "default: no concurrency limit", uncapped.stderr
    resumed = rota(server, token, "queues", "resume", "default")
    assert resumed.stdout.strip() == "default: resumed", resumed.stderr


def test_bad_input_and_a_teams_token_are_refused_clearly(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    negative = rota(server, token, "queues", "limit", "default", "-3")
    assert negative.returncode != 0
    assert "-3" in negative.stderr
    assert ">= 1" in negative.stderr
    words = rota(server, token, "queues", "limit", "default", "lots")
    assert words.returncode == 2
    assert "'lots'" in words.stderr
    bad_name = rota(server, token, "queues", "pause", "no spaces")
    assert bad_name.returncode != 0
    assert "'no spaces'" in bad_name.stderr
    team = rota(server, None, "token", "create", "--namespace", "team-a").stdout.strip()
    refused = rota(server, team, "queues", "pause", "default")
    assert refused.returncode != 0
    assert "whole cluster" in refused.stderr
