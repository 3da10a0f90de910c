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
