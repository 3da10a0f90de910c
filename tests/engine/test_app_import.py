"""``--app`` imports the user's module from the working directory (as uvicorn does), or
from ``--app-dir``; a module that cannot be imported is one line naming the module, the
directory searched and why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

TASKS = """import rota
app = rota.App("sqlite:///rota.db")

@app.handler("hello")
def hello(ctx, payload):
    return payload
"""


def _rota(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # A console script's sys.path holds no working directory: -c mimics that (not -m).
    command = [sys.executable, "-c", "from rota.cli.main import main; main()", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=50)


def test_the_module_in_the_working_directory_is_found(tmp_path: Path):
    (tmp_path / "tasks.py").write_text(TASKS)
    result = _rota("enqueue", "hello", '{"n": 1}', "--app", "tasks:app", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


def test_app_dir_chooses_another_directory(tmp_path: Path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "jobs.py").write_text(TASKS)
    result = _rota(
        "enqueue", "hello", "--app", "jobs:app", "--app-dir", "project", "--db",
        f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (None, "ModuleNotFoundError: No module named 'tasks'"),
        ("import not_a_module_anywhere\n", "No module named 'not_a_module_anywhere'"),
        ("x = 1 +\n", "SyntaxError"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ],
)
def test_a_failed_import_is_one_line(tmp_path: Path, source: str | None, reason: str):
    if source is not None:
        (tmp_path / "tasks.py").write_text(source)
    result = _rota("worker", "--app", "tasks:app", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"cannot import 'tasks' from {tmp_path.resolve()}" in lines[0]
    assert reason in lines[0]
