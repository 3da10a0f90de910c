"""SIGSTOP past the lease, of a worker holding a run and of the current leader holding
one: each run is taken back within TTL + reap interval and finished by another worker;
the stopped process, resumed, has its stale completion refused by the fence."""

from __future__ import annotations

import random
import signal
import time
from collections import Counter

from chaos import invariants, pause
from chaos.harness import Context

NAME = "sigstop"
TITLE = "SIGSTOP of a worker and of the leader past their leases"
BACKEND = "postgres"
TIME_LIMIT = {"small": 180, "full": 480}
LEASE = 2.0
REAP = 0.2  # tests.helpers.start_worker's reap interval
# The observer's slack on top of TTL + reap interval: the lease may have been renewed
# just before the stop, and this 2-core machine schedules the reaper late now and then.
TOLERANCE = 0.5


def prepare(ctx: Context) -> None:
    ctx.app.list_runs(limit=1)


def run(ctx: Context) -> None:
    nodes = ["w1", "w2", "w3"]
    for node in nodes:
        ctx.start(node, lease_seconds=LEASE, concurrency=2)
    ctx.wait_registered(nodes)
    rng = random.Random()
    takeovers: dict[str, list[float]] = {"worker": [], "leader": []}
    failovers: list[float] = []
    refusals: Counter[str] = Counter()
    enqueued = 0
    for kind in ("worker", "leader"):
        for _ in range(ctx.pick(3, 10)):
            holder = ctx.wait(ctx.leader, 30, "a leader")[0]
            target = holder if kind == "leader" else rng.choice([n for n in nodes if n != holder])
            # Still running when stopped (about 1 s after its claim); over by the time
            # the stopped process resumes, so it goes on to complete it.
            run_id, tries = pause.give_run_retrying(ctx, target, nodes, seconds=LEASE + 1)
            enqueued += tries
            took, failover, refused = _pause_holder(ctx, kind, target, run_id)
            takeovers[kind].append(took)
            if failover is not None:
                failovers.append(failover)
            refusals[refused] += 1
    ctx.wait_drained(enqueued, 60)
    ctx.timings("after the pauses, each next node leads once the leader stops, s", _succession(ctx))
    ctx.stop_all()
    bound = LEASE + REAP + TOLERANCE
    for kind, seconds in takeovers.items():
        ctx.timings(f"{kind} stopped: run taken back (lost attempt recorded) after, s", seconds)
        late = [round(s, 2) for s in seconds if s > bound]
        ctx.expect(not late, f"{kind} stops: runs taken back later than {bound} s: {late}")
    ctx.timings("leader stopped: new leader elected after, s", failovers)
    ctx.figure("stale completions refused, by how", dict(refusals))
    ctx.figure("bound (TTL + reap interval + observer slack), s", bound)
    invariants.check(ctx, invariants.Expect(runs=enqueued))


def _pause_holder(
    ctx: Context, kind: str, target: str, run_id: int
) -> tuple[float, float | None, str]:
    before = ctx.leader()
    stopped_at = time.time()
    ctx.signal(target, signal.SIGSTOP)
    try:
        ctx.require(
            ctx.scalar("SELECT state FROM rota_runs WHERE id = %s", (run_id,))
            in ("claimed", "running"),
            f"harness: run {run_id} was over before {target} was stopped (machine too slow?)",
        )
        lost_at = ctx.wait(
            lambda: pause.attempt_lost_at(ctx, run_id, 1),
            timeout=30,
            what=f"run {run_id} held by stopped {kind} {target} to be taken back",
        )
        fence = ctx.wait(
            lambda: pause.succeeded_fence(ctx, run_id),
            timeout=30,
            what=f"run {run_id} to be finished by another worker",
        )
        ctx.expect(fence >= 2, f"run {run_id} succeeded under fence {fence}, not a later one")
        failover = None
        if kind == "leader":
            new = ctx.wait(
                lambda: (info := ctx.leader()) and info[0] != target and info,
                timeout=30,
                what=f"a leader other than the stopped {target}",
            )
            ctx.expect(before is None or new[1] > before[1], f"term did not grow: {before} {new}")
            failover = new[2] - stopped_at
    finally:
        ctx.processes[target].send_signal(signal.SIGCONT)
    refused = ctx.wait(
        lambda: pause.refused_in_log(ctx, target, run_id),
        timeout=20,
        what=f"{target} to refuse its stale attempt of run {run_id} once resumed",
    )
    if kind == "leader":
        ctx.wait(
            lambda: "leadership lost" in ctx.log_text(target),
            timeout=20,
            what=f"resumed leader {target} to notice it was deposed",
        )
    return lost_at - stopped_at, failover, refused


def _succession(ctx: Context) -> list[float]:
    """After the pauses (several of them while leading), stop the leader again and
    again: each time another node must take over, down to the last one. A node whose
    election wedged after a pause would never lead again."""
    handovers = []
    alive = [n for n, p in ctx.processes.items() if p.poll() is None]
    while len(alive) > 1:
        holder = ctx.wait(ctx.leader, 30, "a leader")[0]
        stopped_at = time.time()
        ctx.stop(holder)  # a graceful stop resigns at once
        alive.remove(holder)
        info = ctx.wait(
            lambda h=holder: (i := ctx.leader()) and i[0] != h and i,
            30,
            f"a node of {alive} to lead after {holder} stopped",
        )
        handovers.append(info[2] - stopped_at)
    return handovers
