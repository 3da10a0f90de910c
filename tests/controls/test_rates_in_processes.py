"""A rate limit with real worker processes racing on one database."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
import pytest

import rota
from rota.domain.rates import busiest_window, micros
from tests.helpers import WorkerProcesses, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]
RATE = 20  # tests/apps/proc_app.py's "rated" handler: 20/second per rate_key
RUNS = 200  # 20 at once, then 20 a second: 10 s of load at that rate (issue 14)


def _starts(db_url: str) -> list[int]:
    """Every recorded start of a 'rated' run, in whole microseconds, in order."""
    query = "SELECT started_at FROM rota_runs WHERE handler = 'rated' AND started_at IS NOT NULL"
    rows: list[Any]
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute(query).fetchall()
    else:
        with psycopg.connect(db_url) as conn:
            rows = conn.execute(query).fetchall()
    return sorted(micros(started_at) for (started_at,) in rows)


def test_eight_workers_never_start_more_than_the_rate_in_any_second(
    process_app: rota.App, db_url: str, worker_processes: WorkerProcesses
):
    run_ids = process_app.enqueue_many(
        [{"handler": "rated", "rate_key": "partner-1"} for _ in range(RUNS)]
    )
    for i in range(8):
        worker_processes.start(f"w{i}", concurrency=8)

    def all_done() -> bool:
        return len(process_app.list_runs(state="succeeded", limit=1000)) == len(run_ids)

    wait_until(all_done, timeout=60, what=f"{RUNS} rated runs to finish")
    worker_processes.stop_all()
    starts = _starts(db_url)
    assert len(starts) == RUNS
    busiest = busiest_window(starts, 1_000_000)
    assert busiest <= RATE, f"{busiest} starts in one second under a {RATE}/second rate"
    assert busiest == RATE, "the rate should also be reached, not just respected"
