"""Eight worker processes on one SQLite file while a producer keeps enqueueing: every
run is done once, and no "database is locked" reaches a user (a worker's log, a
handler, or the producer's calls)."""

from __future__ import annotations

import time
from collections import Counter

from chaos import invariants
from chaos.harness import Context

NAME = "sqlite-many"
TITLE = "8 processes on one SQLite file"
BACKEND = "sqlite"
TIME_LIMIT = {"small": 150, "full": 360}
LEASE = 5.0
PROCESSES = 8
LOCKED = "database is locked"


def prepare(ctx: Context) -> None:
    """Nothing: the eight workers and the producer start together on a file that does
    not exist yet, and race to create and migrate it, as a user's first start does."""


def run(ctx: Context) -> None:
    nodes = [f"w{i + 1}" for i in range(PROCESSES)]
    for node in nodes:
        ctx.start(node, lease_seconds=LEASE, concurrency=4)
    batches, batch = ctx.pick((10, 100), (40, 100))
    producer_errors: list[str] = []
    started = time.monotonic()
    for _ in range(batches):  # the producer is a user too: its calls must not fail
        try:
            ctx.app.enqueue_many([{"handler": "record", "payload": {}} for _ in range(batch)])
        except Exception as exc:
            producer_errors.append(repr(exc)[:200])
        time.sleep(0.05)
    runs = batches * batch - len(producer_errors) * batch
    seconds = ctx.wait_drained(runs, ctx.pick(120, 300))
    ctx.stop_all()
    ctx.figure("processes", PROCESSES)
    ctx.figure("runs", runs)
    ctx.figure("drain seconds", round(time.monotonic() - started, 1))
    ctx.figure("after the last enqueue, s", round(seconds, 1))
    ctx.expect(not producer_errors, f"the producer's enqueue failed: {producer_errors[:3]}")
    locked = {
        node: text.count(LOCKED)
        for node in nodes
        if (text := ctx.log_text(node)) and LOCKED in text
    }
    ctx.figure(f'"{LOCKED}" lines in worker logs', locked or 0)
    ctx.expect(not locked, f'"{LOCKED}" reached worker logs: {locked}')
    executed = Counter(m[0] for m in ctx.marks_lines() if m[-1] == "executed")
    twice = [run_id for run_id, n in executed.items() if n > 1]
    ctx.expect(len(executed) == runs, f"{len(executed)} runs executed of {runs}")
    ctx.expect(not twice, f"runs executed more than once: {twice[:5]}")
    invariants.check(ctx, invariants.Expect(runs=runs, no_lost_leases=True))
