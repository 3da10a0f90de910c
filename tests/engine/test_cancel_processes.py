"""A cancel the API acknowledged holds every time, on real worker processes: an async
handler's task is cancelled as soon as its worker learns of the cancel (its next lease
renewal), a plain-def handler sees ``ctx.is_cancelled()``, and a handler that returns
before its worker learns of it still ends Cancelled (the completion says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rota
from rota.domain.states import RunState
from tests.helpers import WorkerProcesses, read_marks, wait_until
from tests.waiting import wait_for_state_of

pytestmark = pytest.mark.timeout(120)

TRIES = 20
# The grace a cancelled handler gets before its task is cancelled, set far beyond the
# test's deadlines: only the immediate cancel of an async task can end a long sleep.
TERMINAL = [state for state in RunState if state.is_terminal]
NO_GRACE_IN_TIME = {"ROTA_CANCEL_GRACE_SECONDS": "600"}
KINDS = {
    "long-async": ("cancellable-async", {"seconds": 600}),
    # Returns right after the cancel is sent, before its worker learns of it (a fixed
    # short sleep could end before a loaded machine sent the cancel at all).
    "short-async": ("cancellable-async", {"seconds": 600, "returns_once_cancelled": True}),
    "sync": ("cancellable-sync", {"seconds": 600}),
}


def _words_of(marks: Path, run_id: int) -> set[str]:
    return {line[3] for line in read_marks(marks) if line[0] == str(run_id)}


def test_every_cancel_holds(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
) -> None:
    for node in ("w1", "w2"):
        worker_processes.start(
            node, lease_seconds=1.5, concurrency=TRIES, extra_env=NO_GRACE_IN_TIME
        )
    kinds = [list(KINDS)[i % len(KINDS)] for i in range(TRIES)]
    run_ids = [process_app.enqueue(*KINDS[kind]) for kind in kinds]
    for run_id in run_ids:
        wait_until(
            lambda run_id=run_id: "started" in _words_of(marks, run_id),
            what=f"run {run_id} to start",
        )
        process_app.cancel(run_id)
        (marks / f"cancel-sent-{run_id}").touch()
    for run_id, kind in zip(run_ids, kinds, strict=True):
        run = wait_for_state_of(
            process_app, run_id, *TERMINAL, timeout=30, what=f"{kind} run to end"
        )
        assert run.state is RunState.CANCELLED, (kind, run)
        assert run.result is None
        words = _words_of(marks, run_id)
        if kind == "long-async":
            assert "task-cancelled" in words
        elif kind == "sync":
            assert "saw-cancel" in words
