"""The README's Python examples run as printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)


def test_quickstart_examples_run(tmp_path: Path):
    tasks, producer = _python_blocks()[:2]
    assert tasks.startswith("# tasks.py")
    (tmp_path / "tasks.py").write_text(tasks)
    result = subprocess.run(
        [sys.executable, "-c", producer], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "pending"
    again = subprocess.run(
        [
            sys.executable,
            "-c",
            producer.replace("print(app.get_run(run_id).state)", "print(run_id)"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.stdout.strip() == "1", "a repeated idempotency key returns the first run"


def test_schedule_and_control_examples_run(tmp_path: Path):
    blocks = _python_blocks()
    tasks = blocks[0]
    schedules = next(b for b in blocks if "app.schedule(" in b)
    controls = next(b for b in blocks if "app.set_limit(" in b)
    (tmp_path / "tasks.py").write_text(tasks)
    script = (
        "from tasks import app\nimport rota\n"
        + schedules
        + controls
        + (
            "print(sorted(j.spec.name for j in app.list_schedules()))\n"
            "print([(l.scope.value, l.name, l.max_running) for l in app.list_limits()])\n"
        )
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    names, limits = result.stdout.strip().splitlines()[-2:]
    assert names == "['heartbeat', 'nightly-report', 'tomorrow-once']"
    assert limits == "[('queue', 'gpu-work', 8)]"


def _runs_as_printed(tmp_path: Path, call: str) -> None:
    """The block calling ``call`` runs after tasks.py and prints what its
    ``# prints ...`` comment says (the comment's own words end at two spaces)."""
    blocks = _python_blocks()
    block = next(b for b in blocks if call in b)
    (tmp_path / "tasks.py").write_text(blocks[0])
    script = "from tasks import app\nimport rota\n" + block
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    printed = re.search(r"# prints (.*?)  ", block)
    assert printed is not None
    assert result.stdout.strip().splitlines()[-1] == printed.group(1)


def test_rate_limit_example_runs_as_printed(tmp_path: Path):
    _runs_as_printed(tmp_path, "app.set_rate(")


def test_breaker_example_runs_as_printed(tmp_path: Path):
    _runs_as_printed(tmp_path, "app.list_breakers(")


def test_workflow_example_runs_as_printed(tmp_path: Path):
    block = next(b for b in _python_blocks() if "rota.Workflow(" in b)
    result = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    printed = result.stdout.strip().splitlines()[-1]
    assert printed == (
        "succeeded [('extract', 'succeeded'), ('load-region', 'succeeded'),"
        " ('report', 'succeeded')]"
    )


def test_workflow_template_example_runs_as_printed(tmp_path: Path):
    block = next(b for b in _python_blocks() if "parameters=schema" in b)
    result = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    schedule, refused = result.stdout.strip().splitlines()[-2:]
    assert schedule == "rota.start-workflow"
    readme = (REPO / "README.md").read_text()
    assert f"prints `{refused}` last" in readme


def test_events_example_runs_as_printed(tmp_path: Path):
    _runs_as_printed(tmp_path, "app.publish(")
