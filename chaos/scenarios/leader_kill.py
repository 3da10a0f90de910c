"""SIGKILL of the current leader, again and again, under a schedule that fires every
second: a new leader is elected within its lease, and no slot is missed or doubled."""

from __future__ import annotations

import signal
import time

from chaos import invariants, schedule
from chaos.harness import Context

NAME = "leader-kill"
TITLE = "SIGKILL of the leader with a one-second schedule"
BACKEND = "postgres"
TIME_LIMIT = {"small": 120, "full": 240}
LEASE = 2.0  # run lease; start_worker gives the leader half of it
LEADER_LEASE = LEASE / 2
TOLERANCE = 1.0  # an election attempt every lease/3, on a busy 2-core machine


def prepare(ctx: Context) -> None:
    ctx.app.list_runs(limit=1)


def run(ctx: Context) -> None:
    job_id = schedule.start(ctx)
    nodes = ["w1", "w2", "w3"]
    for node in nodes:
        ctx.start(node, lease_seconds=LEASE, concurrency=4)
    failovers: list[float] = []
    for spare in range(1, ctx.pick(2, 5) + 1):
        old = ctx.wait(ctx.leader, 30, "a leader")
        # Let it plan for a few slots, then kill it mid-term.
        ctx.wait(
            lambda o=old: (
                ctx.scalar(
                    "SELECT count(*) FROM rota_runs WHERE created_at > to_timestamp(%s)", (o[2],)
                )
                >= 2
            ),
            30,
            f"leader {old[0]} to plan some slots",
        )
        killed_at = time.time()
        ctx.signal(old[0], signal.SIGKILL)
        new = ctx.wait(
            lambda o=old: (info := ctx.leader()) and info[0] != o[0] and info,
            30,
            f"a new leader after {old[0]} was killed",
        )
        ctx.expect(new[1] > old[1], f"the term did not grow: {old} -> {new}")
        failovers.append(new[2] - killed_at)
        ctx.start(f"s{spare}", lease_seconds=LEASE, concurrency=4)  # keep three nodes
    # Slots past the last failover, then stop planning and let everything run.
    last = ctx.leader()
    assert last is not None
    schedule.wait_planned_after(ctx, last[2], "after the last failover")
    schedule.stop_and_check(ctx, job_id)
    total = int(ctx.scalar("SELECT count(*) FROM rota_runs"))
    ctx.wait_drained(total, 60)
    ctx.stop_all()
    ctx.timings("failover: leader killed until a new one holds the lease, s", failovers)
    bound = LEADER_LEASE + TOLERANCE
    slow = [round(s, 2) for s in failovers if s > bound]
    ctx.expect(not slow, f"failovers slower than the leader lease + {TOLERANCE} s: {slow}")
    invariants.check(ctx, invariants.Expect(runs=total))
