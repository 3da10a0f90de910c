"""``app.run_worker()`` from a user's script logs as ``rota worker`` does: info, so no
line per succeeded run (ADR 0026), and leaves structlog as it found it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(90)

SCRIPT = """
import os, signal, threading, time
import rota, structlog

app = rota.App("sqlite:///rota.db")

@app.handler("quick")
def quick(ctx, payload):
    return payload

ids = [app.enqueue("quick", {"n": n}) for n in range(20)]

def stop_when_done():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(app.get_run(i).state == "succeeded" for i in ids):
            break
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_when_done, daemon=True).start()
app.run_worker(node_id="w1", concurrency=4)
print("configured after:", structlog.is_configured())
"""


def test_run_worker_logs_at_info_and_restores_structlog(tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, "work.py"], cwd=tmp_path, capture_output=True, text=True, timeout=80
    )
    assert result.returncode == 0, result.stderr
    assert "worker started" in result.stderr
    assert "run finished" not in result.stderr  # succeeded runs are debug lines
    assert "[debug" not in result.stderr
    assert result.stdout.strip() == "configured after: False"
