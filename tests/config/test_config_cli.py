"""``rota config show`` and ``rota config check``, and a bad file stopping any command
(server, worker, the client's) with one line before it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.timeout(120)
KEY = "s3cret-signing-key-abcdefghijklmnopqrstuvwxyz-0123"


def rota(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ROTA_")}
    return subprocess.run(
        [sys.executable, "-m", "rota", *args],
        env={**environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_show_prints_values_origins_and_hides_secrets(tmp_path: Path) -> None:
    (tmp_path / "jwt").write_text(KEY + "\n")
    (tmp_path / "rota.yaml").write_text(
        "database:\n  url: postgresql://rota:in-the-url@db/rota\n"
        "worker:\n  concurrency: 3\n  lease_seconds: 20\n"
    )
    shown = rota(
        tmp_path,
        "--config",
        "rota.yaml",
        "config",
        "show",
        ROTA_LEASE_SECONDS="9",
        ROTA_JWT_SECRET_FILE=str(tmp_path / "jwt"),
    )
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines()}
    assert lines["worker.concurrency"].split()[1:] == ["3", "(file", "rota.yaml)"]
    assert lines["worker.lease_seconds"].split()[1:] == ["9.0", "(env", "ROTA_LEASE_SECONDS)"]
    assert lines["worker.poll_seconds"].endswith("1.0  (default)")
    assert "(env ROTA_JWT_SECRET_FILE)" in lines["auth.jwt_secret"]
    assert KEY not in shown.stdout
    assert "in-the-url" not in shown.stdout
    assert "postgresql://rota:**********@db/rota" in lines["database.url"]


def test_show_names_flags(tmp_path: Path) -> None:
    shown = rota(tmp_path, "--ca-file", "ca.pem", "config", "show", "--db", "sqlite:///x.db")
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines()}
    assert lines["client.ca_file"].split()[1:] == ["ca.pem", "(flag)"]
    assert lines["database.url"].split()[1:] == ["sqlite:///x.db", "(flag)"]


def test_check_validates_without_starting(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text("worker:\n  concurrency: 3\n")
    good = rota(tmp_path, "config", "check", "good.yaml")
    assert (good.returncode, good.stdout.strip()) == (0, "good.yaml: ok (1 settings)")
    (tmp_path / "bad.yaml").write_text("worker:\n  concurrency: -3\n")
    bad = rota(tmp_path, "config", "check", "bad.yaml")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "rota: error: invalid worker.concurrency in bad.yaml: -3; expected an integer >= 1"
    )


def test_check_applies_the_rules_between_settings(tmp_path: Path) -> None:
    (tmp_path / "weak.yaml").write_text(
        "auth:\n  jwt_secret: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
    )
    weak = rota(tmp_path, "config", "check", "weak.yaml")
    assert weak.returncode == 2
    assert "ROTA_JWT_SECRET has only 1 distinct" in weak.stderr
    assert "aaaa" not in weak.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["server", "--dev"],
        ["worker", "--app", "tests.apps.proc_app:app"],
        ["jobs", "list"],
        ["db", "status"],
    ],
)
def test_a_bad_file_stops_every_command_in_one_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "rota.yaml").write_text("worker:\n  concurency: 3\n")
    stopped = rota(tmp_path, *command, ROTA_CONFIG="rota.yaml", PYTHONPATH=str(REPO))
    assert stopped.returncode == 2
    lines = stopped.stderr.strip().splitlines()
    assert len(lines) == 1, stopped.stderr
    assert lines[0].startswith("rota: error: invalid key in rota.yaml: 'worker.concurency'")


def test_a_flag_wins_over_the_file(tmp_path: Path) -> None:
    """worker.http in the file is malformed, the flag's address is malformed otherwise:
    the error names the flag's, so the flag was the one used."""
    (tmp_path / "rota.yaml").write_text("worker:\n  http: from-file\n")
    args = ["--config", "rota.yaml", "worker", "--app", "tests.apps.proc_app:app"]
    flagged = rota(tmp_path, *args, "--http", "from-flag", PYTHONPATH=str(REPO))
    assert flagged.returncode == 2
    assert "'from-flag'" in flagged.stderr, flagged.stderr
    from_env = rota(tmp_path, *args, ROTA_WORKER_HTTP="from-env", PYTHONPATH=str(REPO))
    assert "'from-env'" in from_env.stderr, from_env.stderr
    from_file = rota(tmp_path, *args, PYTHONPATH=str(REPO))
    assert "'from-file'" in from_file.stderr, from_file.stderr
