"""The CLI's owner and labels (issue 29): ``rota enqueue --owner --label`` writes them,
``rota runs list --owner --label --priority`` filters on them through a live server;
a bad ``--label`` is one line naming it and the rule, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
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


def test_bulk_takes_the_listings_owner_label_and_priority(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    headers = {"Authorization": f"Bearer {token}"}

    def enqueue(**body: object) -> int:
        body = {"handler": "export-csv", "payload": {}, "queue": "meta-bulk", **body}
        body["run_at"] = "2099-01-01T00:00:00+00:00"  # never due: they stay pending
        made = httpx.post(f"{server}/api/v1/runs", json=body, headers=headers, timeout=10)
        assert made.status_code == 201, made.text
        return int(made.json()["run_id"])

    acme = enqueue(owner="billing", labels={"customer": "acme"})
    enqueue(owner="billing", labels={"customer": "globex"})
    enqueue(owner="data", labels={"customer": "acme"})
    urgent = enqueue(owner="data", priority=9)

    def cancel(*filters: str) -> dict[str, int]:
        done = rota(server, token, "runs", "bulk", "cancel", "--queue", "meta-bulk",
                    "--yes", "--json", *filters)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return {k: v for k, v in json.loads(done.stdout).items() if k in ("matched", "affected")}

    assert cancel("--owner", "billing", "--label", "customer=acme") == {"matched": 1, "affected": 1}
    assert cancel("--owner", "data", "--priority", "9") == {"matched": 1, "affected": 1}
    listed = rota(server, token, "runs", "list", "--queue", "meta-bulk", "--state", "cancelled",
                  "--json")  # fmt: skip
    assert [run["id"] for run in json.loads(listed.stdout)["items"]] == [urgent, acme]
    bad = rota(server, token, "runs", "bulk", "cancel", "--label", "customer", "--yes")
    assert bad.returncode == 2
    assert "invalid label: 'customer'; expected key=value" in bad.stderr


def test_jobs_are_listed_by_owner_and_labels_and_both_can_be_cleared(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    job_options = ("--handler", "export-csv", "--payload", "{}")
    for name, *options in (
        ("owned-a", "--owner", "team-a", "--label", "env=prod", "--label", "tier=1"),
        ("owned-b", "--owner", "team-a", "--label", "env=dev"),
        ("owned-c", "--owner", "team-c", "--label", "env=prod"),
    ):
        made = rota(server, token, "jobs", "create", name, *job_options, *options)
        assert made.returncode == 0, made.stderr

    def listed(*filters: str) -> list[str]:
        answer = rota(server, token, "jobs", "list", "--json", *filters)
        assert answer.returncode == 0, answer.stderr
        return [job["name"] for job in json.loads(answer.stdout) if job["name"].startswith("owned")]

    assert listed("--owner", "team-a") == ["owned-a", "owned-b"]
    assert listed("--label", "env=prod") == ["owned-a", "owned-c"]
    assert listed("--owner", "team-a", "--label", "env=prod", "--label", "tier=1") == ["owned-a"]

    cleared = rota(server, token, "jobs", "update", "owned-b", "--owner", "", "--clear-labels",
                   "--json")  # fmt: skip
    assert cleared.returncode == 0, cleared.stderr
    assert (json.loads(cleared.stdout)["owner"], json.loads(cleared.stdout)["labels"]) == (None, {})
    assert listed("--owner", "team-a") == ["owned-a"]
    kept = rota(server, token, "jobs", "update", "owned-c", "--queue", "other", "--json")
    assert (json.loads(kept.stdout)["owner"], json.loads(kept.stdout)["labels"]) == (
        "team-c",
        {"env": "prod"},
    )

    both = rota(server, token, "jobs", "update", "owned-a", "--clear-labels", "--label", "a=b")
    assert both.returncode == 2
    assert "--clear-labels and --label contradict each other" in both.stderr
    bad = rota(server, token, "jobs", "list", "--label", "Env=prod")
    assert bad.returncode == 2
    assert "invalid label key: 'Env'" in bad.stderr
    bad_owner = rota(server, token, "jobs", "list", "--owner", "has space")
    assert bad_owner.returncode != 0
    assert "has space" in bad_owner.stderr
    assert "Traceback" not in bad_owner.stderr
