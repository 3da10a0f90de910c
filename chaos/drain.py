"""A drain under fire: worker processes work through effect runs (each writes a row
through ctx.transaction() that commits with its completion) while a fault is injected;
then every worker must still be the process it was, and the invariants must hold."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from chaos import invariants, schedule
from chaos.harness import Context

LEASE = 2.0
DECLARED_DEAD = "worker stopped heartbeating; declared dead"


@dataclass(frozen=True)
class Drain:
    runs: int
    workers: int = 3
    concurrency: int = 8
    hold: float = 0.02  # seconds each handler keeps its transaction open
    # Every other run gets one of this many concurrency keys (limit 2 each), so that
    # the limited claim, which holds the cluster's limits lock across its statements,
    # meets the fault too. 0: every run plain.
    keys: int = 0


def _request(drain: Drain, n: int) -> dict[str, object]:
    request: dict[str, object] = {"handler": "effect", "payload": {"hold": drain.hold, "n": n}}
    if drain.keys and n % 2 == 0:
        request.update(concurrency_key=f"k{n // 2 % drain.keys}", key_limit=2)
    return request


def start(ctx: Context, drain: Drain) -> None:
    invariants.create_effects_table(ctx)
    for i in range(drain.workers):
        ctx.start(f"w{i + 1}", lease_seconds=LEASE, concurrency=drain.concurrency)
    ctx.app.enqueue_many([_request(drain, n) for n in range(drain.runs)])


def done_count(ctx: Context) -> int:
    return int(
        ctx.scalar(
            "SELECT count(*) FROM rota_runs WHERE state = 'succeeded' AND handler = 'effect'"
        )
    )


def run_with_fault(
    ctx: Context,
    drain: Drain,
    fault: Callable[[threading.Event], None],
    timeout: float,
    *,
    database_stays_up: bool,
) -> None:
    """Start the drain, run ``fault(stop)`` in a thread until the drain is over (or the
    fault returns), then check that every worker survived and the invariants hold.
    ``database_stays_up``: the server answers throughout (only connections die), so no
    live worker may lose a lease: a lost lease spends an attempt (and counts towards
    poison) for a fault of the infrastructure."""
    # The leader's duties must outlive the faults: an every-second schedule must still
    # be planned, slot by slot, when the drain is over.
    job_id = schedule.start(ctx)
    start(ctx, drain)
    pids = {node: proc.pid for node, proc in ctx.processes.items()}
    stop = threading.Event()
    errors: list[BaseException] = []

    def injector() -> None:
        try:
            fault(stop)
        except BaseException as exc:  # reported below, with the scenario's failures
            errors.append(exc)

    thread = threading.Thread(target=injector, name="chaos-fault", daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        ctx.wait_drained(drain.runs, timeout, handler="effect")
        ctx.figure("drain seconds", round(time.monotonic() - started, 1))
        stop.set()  # the faults end with the drain (they would hit this process's calls)
        thread.join(timeout=60)
        schedule.wait_planned_after(ctx, time.time(), "after the faults (the planner lives)")
        planned = schedule.stop_and_check(ctx, job_id)
    finally:
        stop.set()
        thread.join(timeout=60)
        ctx.expect(not thread.is_alive(), "the fault injector did not stop within 60 s")
        ctx.expect(not errors, f"the fault injector failed: {errors!r}")
        died = ctx.unexpected_exits()
        ctx.expect(not died, f"worker processes died or were restarted: {died}")
        same = {node: proc.pid for node, proc in ctx.processes.items()}
        ctx.expect(same == pids, f"worker processes changed: {pids} -> {same}")
        ctx.stop_all()
    invariants.check(
        ctx,
        invariants.Expect(
            runs=drain.runs + planned, effects=True, no_lost_leases=database_stays_up
        ),
    )
    ctx.figure("runs", drain.runs)
    # Every worker stayed alive (checked above): any "declared dead" was a live one.
    declared = sum(ctx.log_text(node).count(DECLARED_DEAD) for node in ctx.processes)
    ctx.figure("live workers declared dead by the leader (log lines)", declared)
    # Every worker stayed alive, so each of these is a healthy worker that lost a run
    # (an invariant when the database stays up; a figure when it was away past a lease).
    ctx.figure(
        "leases lost by live workers",
        ctx.scalar("SELECT count(*) FROM rota_run_attempts WHERE outcome = 'lost'"),
    )
