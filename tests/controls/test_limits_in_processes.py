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
from tests.apps.proc_app import app as proc_app
from tests.helpers import read_marks, start_worker, stop_all, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
FAST_REGISTRY = {"ROTA_WORKER_HEARTBEAT_SECONDS": "0.2", "ROTA_WORKER_DEAD_SECONDS": "1.0"}


@pytest.fixture
def app(db_url: str):
    app = rota.App(db_url)
    app.registry = proc_app.registry
    yield app
    app.close()


def _active(db_url: str) -> list[tuple[str, str | None]]:
    """(handler, concurrency_key) of every claimed or running run, in ONE snapshot: two
    queries could count a run moving from claimed to running twice."""
    query = "SELECT handler, concurrency_key FROM rota_runs WHERE state IN ('claimed', 'running')"
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            return conn.execute(query).fetchall()
    with psycopg.connect(db_url) as conn:
        return conn.execute(query).fetchall()


def _heartbeats(app: rota.App, node_id: str, count: int = 2) -> None:
    """Wait for ``count`` registry heartbeats of a worker: after the first it knows its
    state (e.g. draining), after the second any claim it had in flight is done."""
    for _ in range(count):
        seen = next(w for w in app.list_workers() if w.node_id == node_id).heartbeat_at

        def beat(seen: object = seen) -> bool:
            worker = next(w for w in app.list_workers() if w.node_id == node_id)
            return worker.heartbeat_at > seen  # type: ignore[operator]

        wait_until(beat, what=f"a heartbeat from {node_id}")


def test_limits_hold_while_eight_workers_race(app: rota.App, db_url: str, marks: Path):
    keyed = [{"handler": "keyed", "concurrency_key": "customer-42"} for _ in range(40)]
    single = [{"handler": "single"} for _ in range(20)]
    run_ids = app.enqueue_many(keyed + single)
    workers = [start_worker(db_url, f"w{i}", marks, concurrency=4) for i in range(8)]
    most_keyed = most_single = 0
    try:
        deadline = time.monotonic() + 120
        while True:
            active = _active(db_url)
            most_keyed = max(most_keyed, sum(key == "customer-42" for _, key in active))
            most_single = max(most_single, sum(handler == "single" for handler, _ in active))
            assert most_keyed <= 2, "the key limit was exceeded"
            assert most_single <= 1, "a singleton ran twice at once"
            done = len(app.list_runs(state="succeeded", limit=1000))
            if done == len(run_ids):
                break
            assert time.monotonic() < deadline, f"only {done} of {len(run_ids)} finished"
    finally:
        stop_all(workers)
    assert most_keyed == 2, "the limit should also be reached, not just respected"
    assert most_single == 1


def test_gpu_runs_go_only_to_gpu_workers(app: rota.App, db_url: str, marks: Path):
    plain = start_worker(db_url, "plain", marks)
    workers = [plain]
    try:
        gpu_run = app.enqueue("gpu-job", {})
        marker = app.enqueue("record", {})
        wait_until(lambda: app.get_run(marker).state is RunState.SUCCEEDED, what="marker")
        assert app.get_run(gpu_run).state is RunState.PENDING
        workers.append(start_worker(db_url, "gpu-box", marks, args=("--tags", "gpu")))
        run = wait_until(
            lambda: (r := app.get_run(gpu_run)).state is RunState.SUCCEEDED and r,
            what="the gpu worker to run it",
        )
    finally:
        stop_all(workers)
    assert run.result == "gpu-box"


def test_a_draining_worker_finishes_what_it_holds_and_claims_nothing(
    app: rota.App, db_url: str, marks: Path
):
    worker = start_worker(db_url, "w1", marks, extra_env=FAST_REGISTRY)
    try:
        held = app.enqueue("slow", {"seconds": 1.0})
        wait_until(lambda: any(m[-1] == "started" for m in read_marks(marks)), what="a start")
        wait_until(lambda: app.list_workers(), what="registration")
        app.drain_worker("w1")
        _heartbeats(app, "w1")
        waiting = app.enqueue("record", {})
        wait_until(lambda: app.get_run(held).state is RunState.SUCCEEDED, what="held run to end")
        _heartbeats(app, "w1")  # alive, polling, and still not claiming
        assert app.list_workers()[0].state is WorkerState.DRAINING
        assert app.get_run(waiting).state is RunState.PENDING
        app.resume_worker("w1")
        wait_until(lambda: app.get_run(waiting).state is RunState.SUCCEEDED, what="resume")
    finally:
        stop_all([worker])


def test_a_killed_workers_runs_return_before_their_lease_would_expire(
    app: rota.App, db_url: str, marks: Path
):
    lease = 60.0  # long: the run must come back through dead-node detection, not expiry
    env = {**FAST_REGISTRY, "ROTA_LEADER_LEASE_SECONDS": "1"}
    leader = start_worker(db_url, "leader", marks, lease_seconds=lease, extra_env=env)
    workers = [leader]
    try:
        wait_until(lambda: app.leader() and app.leader().holder == "leader", what="a leader")
        wait_until(lambda: app.list_workers(), what="registration")
        app.drain_worker("leader")  # it must not take the run first
        _heartbeats(app, "leader")
        victim = start_worker(db_url, "victim", marks, lease_seconds=lease, extra_env=env)
        workers.append(victim)
        run_id = app.enqueue("slow", {"seconds": 3600, "first_only": True})
        wait_until(lambda: any(m[2] == "victim" for m in read_marks(marks)), what="victim start")
        app.resume_worker("leader")
        victim.send_signal(signal.SIGKILL)
        killed_at = time.time()
        run = wait_until(
            lambda: (r := app.get_run(run_id)).state is RunState.SUCCEEDED and r,
            timeout=30,
            what="the run to be reclaimed and finished",
        )
    finally:
        stop_all(workers)
    assert run.result == {"worker": "leader", "fence": 2}
    assert run.finished_at.timestamp() - killed_at < lease / 4
    states = {w.node_id: w.state for w in app.list_workers()}
    assert states["victim"] is WorkerState.DEAD
