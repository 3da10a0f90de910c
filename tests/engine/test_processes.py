"""Real worker processes against a real database: crashes, stalls and contention."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

import rota
from rota.domain.states import TERMINAL_STATES, AttemptOutcome, RunState
from tests.helpers import WorkerProcesses, read_marks, wait_until
from tests.waiting import wait_for_state_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _states(process_app: rota.App, run_ids: list[int]) -> Counter[str]:
    return Counter(process_app.get_run(i).state.value for i in run_ids)


def test_five_workers_execute_and_record_each_run_once(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    run_ids = process_app.enqueue_many(
        [{"handler": "record", "payload": {"n": n}} for n in range(200)]
    )
    for i in range(5):
        worker_processes.start(f"w{i}")
    wait_until(
        lambda: len(process_app.list_runs(state="succeeded", limit=1000)) == 200,
        timeout=90,
        what="all 200 runs to succeed",
    )
    worker_processes.stop_all()
    executed = Counter(int(words[0]) for words in read_marks(marks) if words[-1] == "executed")
    assert sorted(executed) == sorted(run_ids)
    assert set(executed.values()) == {1}, "a run was executed more than once"
    for run_id in run_ids[::20]:
        detail = process_app.run_detail(run_id)
        assert [a.outcome for a in detail.attempts] == [AttemptOutcome.SUCCEEDED]


def test_sigkill_mid_run_is_finished_by_another_worker(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    lease = 2.0
    w1 = worker_processes.start("w1", lease_seconds=lease)
    run_id = process_app.enqueue("slow", {"seconds": 3600, "first_only": True})
    wait_until(lambda: any(m[2] == "w1" for m in read_marks(marks)), what="w1 to start the run")
    worker_processes.start("w2", lease_seconds=lease)
    w1.send_signal(signal.SIGKILL)
    # How soon after the lease the run is taken over is measured by `make chaos`
    # (docs/reliability.md), not asserted here: on a loaded machine w2's start-up alone
    # can take longer than the lease.
    run = wait_for_state_of(
        process_app, run_id, RunState.SUCCEEDED, timeout=30, what="w2 to finish"
    )
    worker_processes.stop_all()
    assert run.result == {"worker": "w2", "fence": 2}
    assert run.finished_at is not None
    outcomes = [(a.worker_id, a.outcome) for a in process_app.run_detail(run_id).attempts]
    assert outcomes == [("w1", AttemptOutcome.LOST), ("w2", AttemptOutcome.SUCCEEDED)]


def test_stalled_worker_cannot_overwrite_the_newer_result(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    lease = 1.5
    w1 = worker_processes.start("w1", lease_seconds=lease)
    run_id = process_app.enqueue("slow", {"seconds": 2.0})
    wait_until(lambda: any(m[2] == "w1" for m in read_marks(marks)), what="w1 to start")
    w1.send_signal(signal.SIGSTOP)  # paused, holding fence 1, past its lease
    worker_processes.start("w2", lease_seconds=lease)
    wait_until(lambda: process_app.get_run(run_id).fence == 2, timeout=30, what="w2 to take over")
    w1.send_signal(signal.SIGCONT)  # w1 wakes up and finishes its stale attempt
    wait_until(
        lambda: ["1", "w1", "finished"] in [m[1:] for m in read_marks(marks)],
        timeout=30,
        what="w1 to finish its stale attempt",
    )
    wait_for_state_of(process_app, run_id, *TERMINAL_STATES, timeout=30, what="the run to finish")
    # w1's outcome is in flight or discarded by now; give it no way to land later.
    worker_processes.stop_all()
    run = process_app.get_run(run_id)
    assert run.state is RunState.SUCCEEDED
    assert run.result == {"worker": "w2", "fence": 2}
    attempts = process_app.run_detail(run_id).attempts
    assert [(a.fence, a.worker_id, a.outcome) for a in attempts] == [
        (1, "w1", AttemptOutcome.LOST),
        (2, "w2", AttemptOutcome.SUCCEEDED),
    ]


def test_a_run_that_kills_its_worker_repeatedly_becomes_poison(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    lease = 1.0
    run_id = process_app.enqueue("slow", {"seconds": 3600}, max_attempts=10)
    for crash in range(3):
        worker = worker_processes.start(f"w{crash}", lease_seconds=lease)
        wait_until(
            lambda n=f"w{crash}": any(m[2] == n for m in read_marks(marks)),
            what=f"worker {crash} to start the run",
        )
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    # Someone must notice the last lease expiring: a fresh worker's reaper.
    worker_processes.start("reaper", lease_seconds=lease)
    run = wait_for_state_of(
        process_app, run_id, RunState.DEAD_LETTERED, timeout=30, what="the run to be dead-lettered"
    )
    worker_processes.stop_all()
    assert "poison" in (run.error or "")
    assert [a.outcome for a in process_app.run_detail(run_id).attempts] == [AttemptOutcome.LOST] * 3
