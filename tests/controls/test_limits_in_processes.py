"""Claim-time controls with real worker processes racing on one database."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import psycopg
import pytest

import rota
from rota.domain.states import RunState
from rota.domain.workers import WorkerState
from tests.helpers import WorkerProcesses, read_marks, wait_until
from tests.waiting import wait_for_state_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
FAST_REGISTRY = {"ROTA_WORKER_HEARTBEAT_SECONDS": "0.2", "ROTA_WORKER_DEAD_SECONDS": "1.0"}


def _active(db_url: str) -> list[tuple[str, str | None]]:
    """(handler, concurrency_key) of every claimed or running run, in ONE snapshot: two
    queries could count a run moving from claimed to running twice."""
    query = "SELECT handler, concurrency_key FROM rota_runs WHERE state IN ('claimed', 'running')"
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            return conn.execute(query).fetchall()
    with psycopg.connect(db_url) as conn:
        return conn.execute(query).fetchall()


def _heartbeats(process_app: rota.App, node_id: str, count: int = 2) -> None:
    """Wait for ``count`` registry heartbeats of a worker: after the first it knows its
    state (e.g. draining), after the second any claim it had in flight is done."""
    for _ in range(count):
        seen = next(w for w in process_app.list_workers() if w.node_id == node_id).heartbeat_at

        def beat(seen: object = seen) -> bool:
            worker = next(w for w in process_app.list_workers() if w.node_id == node_id)
            return worker.heartbeat_at > seen  # type: ignore[operator]

        wait_until(beat, what=f"a heartbeat from {node_id}")


def test_limits_hold_while_eight_workers_race(
    process_app: rota.App, db_url: str, worker_processes: WorkerProcesses
):
    keyed = [{"handler": "keyed", "concurrency_key": "customer-42"} for _ in range(40)]
    single = [{"handler": "single"} for _ in range(20)]
    run_ids = process_app.enqueue_many(keyed + single)
    for i in range(8):
        worker_processes.start(f"w{i}", concurrency=4)
    most_keyed = most_single = 0
    deadline = time.monotonic() + 120
    while True:
        active = _active(db_url)
        most_keyed = max(most_keyed, sum(key == "customer-42" for _, key in active))
        most_single = max(most_single, sum(handler == "single" for handler, _ in active))
        assert most_keyed <= 2, "the key limit was exceeded"
        assert most_single <= 1, "a singleton ran twice at once"
        done = len(process_app.list_runs(state="succeeded", limit=1000))
        if done == len(run_ids):
            break
        assert time.monotonic() < deadline, f"only {done} of {len(run_ids)} finished"
    worker_processes.stop_all()
    assert most_keyed == 2, "the limit should also be reached, not just respected"
    assert most_single == 1


def test_gpu_runs_go_only_to_gpu_workers(process_app: rota.App, worker_processes: WorkerProcesses):
    worker_processes.start("plain")
    gpu_run = process_app.enqueue("gpu-job", {})
    marker = process_app.enqueue("record", {})
    wait_for_state_of(process_app, marker, RunState.SUCCEEDED, what="marker")
    assert process_app.get_run(gpu_run).state is RunState.PENDING
    worker_processes.start("gpu-box", args=("--tags", "gpu"))
    run = wait_for_state_of(
        process_app, gpu_run, RunState.SUCCEEDED, what="the gpu worker to run it"
    )
    worker_processes.stop_all()
    assert run.result == "gpu-box"


def test_a_draining_worker_finishes_what_it_holds_and_claims_nothing(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    worker_processes.start("w1", extra_env=FAST_REGISTRY)
    held = process_app.enqueue("slow", {"seconds": 1.0})
    wait_until(lambda: any(m[-1] == "started" for m in read_marks(marks)), what="a start")
    wait_until(lambda: process_app.list_workers(), what="registration")
    process_app.drain_worker("w1")
    _heartbeats(process_app, "w1")
    waiting = process_app.enqueue("record", {})
    wait_for_state_of(process_app, held, RunState.SUCCEEDED, what="held run to end")
    _heartbeats(process_app, "w1")  # alive, polling, and still not claiming
    assert process_app.list_workers()[0].state is WorkerState.DRAINING
    assert process_app.get_run(waiting).state is RunState.PENDING
    process_app.resume_worker("w1")
    wait_for_state_of(process_app, waiting, RunState.SUCCEEDED, what="resume")


def test_a_killed_workers_runs_return_before_their_lease_would_expire(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    lease = 60.0  # long: the run must come back through dead-node detection, not expiry
    env = {**FAST_REGISTRY, "ROTA_LEADER_LEASE_SECONDS": "1"}
    worker_processes.start("leader", lease_seconds=lease, extra_env=env)
    wait_until(
        lambda: process_app.leader() and process_app.leader().holder == "leader", what="a leader"
    )
    wait_until(lambda: process_app.list_workers(), what="registration")
    process_app.drain_worker("leader")  # it must not take the run first
    _heartbeats(process_app, "leader")
    victim = worker_processes.start("victim", lease_seconds=lease, extra_env=env)
    run_id = process_app.enqueue("slow", {"seconds": 3600, "first_only": True})
    wait_until(lambda: any(m[2] == "victim" for m in read_marks(marks)), what="victim start")
    process_app.resume_worker("leader")
    victim.send_signal(signal.SIGKILL)
    killed_at = time.time()
    run = wait_for_state_of(
        process_app,
        run_id,
        RunState.SUCCEEDED,
        timeout=30,
        what="the run to be reclaimed and finished",
    )
    worker_processes.stop_all()
    assert run.result == {"worker": "leader", "fence": 2}
    assert run.finished_at.timestamp() - killed_at < lease / 4
    states = {w.node_id: w.state for w in process_app.list_workers()}
    assert states["victim"] is WorkerState.DEAD
