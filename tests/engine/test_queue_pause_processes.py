"""Pausing a queue with real worker processes (issue 29, ADR 0035): two processes drain a
queue; it is paused mid-drain; from the next claim round no run of it is claimed any
more (the claim statements read the pause themselves, whatever a worker's cached paused
set says), while the runs they held finish and their other queue is still served;
resumed, the queue drains to the end."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import psycopg
import pytest

import rota
from rota.domain.states import RunState
from tests.helpers import WorkerProcesses, wait_until
from tests.waiting import wait_for_state_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
RUNS = 300
HANDLER_SECONDS = 0.2  # 2 processes x 4 slots: ~40 runs a second, a drain of ~8 s
# paused_at is the pause statement's own clock: a claim that began after the pause
# committed takes nothing from the queue; one that began before it may, and its
# started_at is later than paused_at by at most the pause's own write (SQLite: its wait
# for the writer lock). One claim round, generous on the shared 2-core machine.
ONE_CLAIM_ROUND = 1.0


def _one(db_url: str, query: str, *params: Any) -> Any:
    """One value, read in one snapshot (instants as unix seconds on both databases)."""
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            return conn.execute(query.replace("%s", "?"), params).fetchone()[0]
    query = query.replace("started_at", "extract(epoch FROM started_at)::float8")
    query = query.replace("paused_at", "extract(epoch FROM paused_at)::float8")
    with psycopg.connect(db_url) as conn:
        row = conn.execute(query, params).fetchone()
        assert row is not None
        return row[0]


def _count(db_url: str, state_test: str) -> int:
    query = f"SELECT count(*) FROM rota_runs WHERE queue = 'bulk' AND state {state_test}"
    return int(_one(db_url, query))


def _markers_pass(app: rota.App) -> None:
    """Runs of the other queue are claimed and finish: the workers are claiming."""
    ids = app.enqueue_many([{"handler": "record", "payload": {}} for _ in range(4)])
    for run_id in ids:
        wait_for_state_of(app, run_id, RunState.SUCCEEDED, what="a run of default")


def test_a_paused_queue_stops_new_claims_within_one_round_and_resumes(
    process_app: rota.App, db_url: str, worker_processes: WorkerProcesses
) -> None:
    payload = {"seconds": HANDLER_SECONDS}
    process_app.enqueue_many(
        [{"handler": "slow", "payload": payload, "queue": "bulk"} for _ in range(RUNS)]
    )
    for node in ("qa", "qb"):
        worker_processes.start(node, concurrency=4, args=("--queues", "bulk,default"))
    wait_until(lambda: _count(db_url, "= 'succeeded'") >= 20, timeout=60, what="a drain")

    process_app.pause_queue("bulk", by="test")
    paused_at = float(_one(db_url, "SELECT paused_at FROM rota_queues WHERE name = 'bulk'"))
    # The runs held when it was paused finish; nothing new is claimed meanwhile.
    wait_until(
        lambda: _count(db_url, "IN ('claimed', 'running')") == 0,
        timeout=30,
        what="the held runs of bulk to finish",
    )
    _markers_pass(process_app)
    pending = _count(db_url, "= 'pending'")
    assert pending > 0, "the drain ended before the pause: make it longer"
    _markers_pass(process_app)  # more claim rounds on both workers ...
    assert _count(db_url, "= 'pending'") == pending, "... and none took a run of bulk"
    latest = float(_one(db_url, "SELECT max(started_at) FROM rota_runs WHERE queue = 'bulk'"))
    late = latest - paused_at
    assert late <= ONE_CLAIM_ROUND, f"a run was claimed {late:.2f} s after"
    assert _count(db_url, "IN ('failed', 'dead_lettered', 'retrying')") == 0

    started = time.monotonic()
    process_app.resume_queue("bulk")
    wait_until(
        lambda: _count(db_url, "= 'succeeded'") == RUNS, timeout=120, what="the drain to end"
    )
    assert time.monotonic() - started < 120
    [control] = [q.control for q in process_app.list_queues() if q.name == "bulk"]
    assert not control.paused
