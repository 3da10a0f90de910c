"""The CLI's owner and labels (issue 29): ``rota enqueue --owner --label`` writes them,
``rota runs list --owner --label --priority`` filters on them through a live server;
a bad ``--label`` is one line naming it and the rule, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rota.cli.main import main

from .test_cli_e2e import rota, server

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the fixture, used by name

APP = ("--app", "rota.examples:app")


def _enqueue(db: str, *options: str) -> int:
    result = CliRunner().invoke(
        main, ["enqueue", "export-csv", '{"file": "a.csv"}', *APP, "--db", db, *options]
    )
    assert result.exit_code == 0, result.output
    return int(result.output.strip())


def test_enqueue_with_owner_and_labels_then_list_by_them(server: str, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'rota.db'}"  # the server's database (test_cli_e2e)
    both = _enqueue(db, "--owner", "billing", "--label", "env=prod", "--label", "tier=1")
    prod = _enqueue(db, "--owner", "data", "--label", "env=prod", "--priority", "2")
    _enqueue(db, "--priority", "2")
    token = rota(server, None, "token", "create").stdout.strip()

    def listed(*filters: str) -> list[int]:
        answer = rota(server, token, "runs", "list", "--json", *filters)
        assert answer.returncode == 0, answer.stderr
        return [run["id"] for run in json.loads(answer.stdout)["items"]]

    assert listed("--owner", "billing") == [both]
    assert listed("--label", "env=prod") == [prod, both]
    assert listed("--label", "env=prod", "--label", "tier=1") == [both]
    assert listed("--label", "env=prod", "--priority", "2") == [prod]
    table = rota(server, token, "runs", "list", "--owner", "data")
    assert "data" in table.stdout
    shown = rota(server, token, "runs", "show", str(both))
    assert "owner: billing  labels: env=prod, tier=1" in shown.stdout

    job_options = ("--handler", "export-csv", "--payload", '{"file": "b.csv"}')
    made = rota(server, token, "jobs", "create", "sync", *job_options,
                "--owner", "ops", "--label", "env=dev")  # fmt: skip
    assert made.returncode == 0, made.stderr
    job = json.loads(rota(server, token, "jobs", "show", "sync", "--json").stdout)
    assert (job["owner"], job["labels"]) == ("ops", {"env": "dev"})
    triggered = rota(server, token, "jobs", "trigger", "sync")
    assert triggered.returncode == 0, triggered.stderr
    assert listed("--owner", "ops", "--label", "env=dev") == [int(triggered.stdout.split()[0])]

    bad = rota(server, token, "runs", "list", "--label", "env")
    assert bad.returncode != 0
    assert "invalid label: 'env'; expected key=value" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_enqueue_refuses_a_bad_label_in_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'rota.db'}"
    assert CliRunner().invoke(main, ["db", "upgrade", "--db", db]).exit_code == 0
    result = CliRunner().invoke(
        main, ["enqueue", "export-csv", "{}", *APP, "--db", db, "--label", "Env=prod"]
    )
    assert result.exit_code == 2
    assert result.output.strip().startswith("rota: error: invalid label key: 'Env'")
    assert "lowercase letters" in result.output
